package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	addonsv1 "sigs.k8s.io/cluster-api/api/addons/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	coreconversion "sigs.k8s.io/cluster-api/core/webhooks/conversion"
)

// conversionRequest is a ConversionReview's work for the kinds capt's own webhook hands to Cluster API's conversion
// functions (the kinds a capt cluster is not made of): every object to desiredAPIVersion.
type conversionRequest struct {
	DesiredAPIVersion string            `json:"desiredAPIVersion"`
	Objects           []json.RawMessage `json:"objects"`
}

type conversionOutput struct {
	Objects []map[string]any `json:"objects"`
}

// delegatedConverters are Cluster API's conversion webhooks' converters for those kinds, by group and kind.
var delegatedConverters = map[schema.GroupKind]conversion.Converter{}

func init() {
	kinds := map[schema.GroupKind]func(*runtime.Scheme) (conversion.Converter, error){
		{Group: clusterv1.GroupVersion.Group, Kind: "ClusterClass"}:             coreconversion.ClusterClass,
		{Group: clusterv1.GroupVersion.Group, Kind: "MachinePool"}:              coreconversion.MachinePool,
		{Group: clusterv1.GroupVersion.Group, Kind: "MachineDrainRule"}:         coreconversion.MachineDrainRule,
		{Group: addonsv1.GroupVersion.Group, Kind: "ClusterResourceSet"}:        coreconversion.ClusterResourceSet,
		{Group: addonsv1.GroupVersion.Group, Kind: "ClusterResourceSetBinding"}: coreconversion.ClusterResourceSetBinding,
		{Group: runtimev1.GroupVersion.Group, Kind: "ExtensionConfig"}:          coreconversion.ExtensionConfig,
		{Group: ipamv1.GroupVersion.Group, Kind: "IPAddress"}:                   coreconversion.IPAddress,
		{Group: ipamv1.GroupVersion.Group, Kind: "IPAddressClaim"}:              coreconversion.IPAddressClaim,
	}
	for gk, converter := range kinds {
		c, err := converter(scheme)
		utilruntime.Must(err)
		delegatedConverters[gk] = c
	}
	// A reference converted back to v1beta1 names its kind's apiVersion, which Cluster API reads from the CRD's
	// contract labels: every Cluster API kind and capt's own infrastructure kinds are served at v1beta2.
	coreconversion.SetAPIVersionGetter(func(_ context.Context, gk schema.GroupKind) (string, error) {
		if gk.Group == clusterv1.GroupVersion.Group || strings.HasSuffix(gk.Group, "."+clusterv1.GroupVersion.Group) {
			return gk.Group + "/v1beta2", nil
		}
		return "", fmt.Errorf("no version of %s is known here", gk)
	})
}

// convert converts every object with the converter of its kind, as Cluster API's conversion webhook does; the
// first that cannot be is named in the error.
func (r *conversionRequest) convert(ctx context.Context) (*conversionOutput, error) {
	desired, err := schema.ParseGroupVersion(r.DesiredAPIVersion)
	if err != nil || desired.Version == "" {
		return nil, malformed("desiredAPIVersion %q is not GROUP/VERSION", r.DesiredAPIVersion)
	}
	out := &conversionOutput{Objects: make([]map[string]any, 0, len(r.Objects))}
	for i, raw := range r.Objects {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			return nil, malformed("objects[%d] is not a Kubernetes object: %v", i, err)
		}
		converted, err := convertOne(ctx, u, desired)
		if err != nil {
			return nil, invalid(u.GetKind(), u.GetName(), "", "objects[%d]: %v", i, err)
		}
		out.Objects = append(out.Objects, converted)
	}
	return out, nil
}

func convertOne(ctx context.Context, u *unstructured.Unstructured, desired schema.GroupVersion) (map[string]any, error) {
	gvk := u.GroupVersionKind()
	converter, ok := delegatedConverters[gvk.GroupKind()]
	if !ok || gvk.Group != desired.Group {
		return nil, fmt.Errorf("%s of %s is not a kind this converter serves in %s", gvk.Kind, gvk.Group, desired)
	}
	src, err := scheme.New(gvk)
	if err != nil {
		return nil, fmt.Errorf("%s is not a version of %s this Cluster API release serves", gvk.GroupVersion(), gvk.Kind)
	}
	dst, err := scheme.New(desired.WithKind(gvk.Kind))
	if err != nil {
		return nil, fmt.Errorf("%s is not a version of %s this Cluster API release serves", desired, gvk.Kind)
	}
	if err := decode(u, src); err != nil {
		return nil, err
	}
	src.GetObjectKind().SetGroupVersionKind(gvk)
	if gvk.Version == desired.Version {
		return toMap(src, gvk)
	}
	dst.GetObjectKind().SetGroupVersionKind(desired.WithKind(gvk.Kind))
	if err := converter.ConvertObject(ctx, src, dst); err != nil {
		return nil, fmt.Errorf("cannot convert %s to %s: %w", gvk.GroupVersion(), desired, err)
	}
	return toMap(dst, desired.WithKind(gvk.Kind))
}

func toMap(obj runtime.Object, gvk schema.GroupVersionKind) (map[string]any, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	m["apiVersion"], m["kind"] = gvk.GroupVersion().String(), gvk.Kind
	return m, nil
}
