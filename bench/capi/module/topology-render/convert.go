package main

import (
	"context"
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	addonsv1beta1 "sigs.k8s.io/cluster-api/api/addons/v1beta1"
	addonsv1 "sigs.k8s.io/cluster-api/api/addons/v1beta2"
	bootstrapv1beta1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta1"
	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	controlplanev1beta1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta1"
	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ipamv1alpha1 "sigs.k8s.io/cluster-api/api/ipam/v1alpha1"
	ipamv1beta1 "sigs.k8s.io/cluster-api/api/ipam/v1beta1"
	ipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	runtimev1alpha1 "sigs.k8s.io/cluster-api/api/runtime/v1alpha1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	bootstrapconversion "sigs.k8s.io/cluster-api/bootstrap/kubeadm/webhooks/conversion"
	controlplaneconversion "sigs.k8s.io/cluster-api/controlplane/kubeadm/webhooks/conversion"
	coreconversion "sigs.k8s.io/cluster-api/core/webhooks/conversion"
)

// scheme knows the Cluster API kinds a request may carry, in both served versions, and the CRD kind the
// contract lookups of Cluster API read.
var scheme = newScheme()

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		apiextensionsv1.AddToScheme,
		clusterv1beta1.AddToScheme, clusterv1.AddToScheme,
		bootstrapv1beta1.AddToScheme, bootstrapv1.AddToScheme,
		controlplanev1beta1.AddToScheme, controlplanev1.AddToScheme,
		// The kinds of the convert request (conversion_request.go).
		addonsv1beta1.AddToScheme, addonsv1.AddToScheme,
		ipamv1alpha1.AddToScheme, ipamv1beta1.AddToScheme, ipamv1.AddToScheme,
		runtimev1alpha1.AddToScheme, runtimev1.AddToScheme,
	} {
		utilruntime.Must(add(s))
	}
	return s
}

// convertible is a kind Cluster API serves in several versions: its storage version and its conversion
// webhook's converter. The Cluster and its class are read as v1beta2 by Cluster API's webhooks and generator; the
// control plane and bootstrap templates are rendered in the version the class names (its patches are written for
// it), so their desired objects are converted on the way out, as the API server converts them on the way in.
type convertible struct {
	hub       schema.GroupVersion
	converter func(*runtime.Scheme) (conversion.Converter, error)
}

var convertibles = map[schema.GroupKind]convertible{
	{Group: clusterv1.GroupVersion.Group, Kind: "Cluster"}:                  {clusterv1.GroupVersion, coreconversion.Cluster},
	{Group: clusterv1.GroupVersion.Group, Kind: "ClusterClass"}:             {clusterv1.GroupVersion, coreconversion.ClusterClass},
	{Group: bootstrapv1.GroupVersion.Group, Kind: "KubeadmConfigTemplate"}:  {bootstrapv1.GroupVersion, bootstrapconversion.KubeadmConfigTemplate},
	{Group: controlplanev1.GroupVersion.Group, Kind: "KubeadmControlPlane"}: {controlplanev1.GroupVersion, controlplaneconversion.KubeadmControlPlane},
}

// toStorageVersion decodes a Cluster API object into its v1beta2 type, converting an older version with the
// functions Cluster API's conversion webhooks run. Other objects (infrastructure kinds) stay unstructured.
func toStorageVersion(ctx context.Context, u *unstructured.Unstructured) (client.Object, error) {
	gvk := u.GroupVersionKind()
	c, ok := convertibles[gvk.GroupKind()]
	if !ok {
		return u, nil
	}
	hubGVK := c.hub.WithKind(gvk.Kind)
	hub, err := scheme.New(hubGVK)
	if err != nil {
		return nil, err
	}
	if gvk == hubGVK {
		return hub.(client.Object), decode(u, hub)
	}
	spoke, err := scheme.New(gvk)
	if err != nil {
		return nil, fmt.Errorf("%s is not a version of %s this Cluster API release serves: use %s", gvk.GroupVersion(), gvk.Kind, c.hub)
	}
	if err := decode(u, spoke); err != nil {
		return nil, err
	}
	converter, err := c.converter(scheme)
	if err != nil {
		return nil, err
	}
	hub.GetObjectKind().SetGroupVersionKind(hubGVK)
	if err := converter.ConvertObject(ctx, spoke, hub); err != nil {
		return nil, fmt.Errorf("cannot convert %s to %s: %w", gvk.GroupVersion(), c.hub, err)
	}
	hub.GetObjectKind().SetGroupVersionKind(hubGVK)
	return hub.(client.Object), nil
}

// decode goes through JSON, as the API server decodes a request body: unknown fields are dropped.
func decode(u *unstructured.Unstructured, into runtime.Object) error {
	data, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, into); err != nil {
		return fmt.Errorf("not a valid %s: %w", u.GroupVersionKind().Kind, err)
	}
	return nil
}
