package main

import (
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/contract"
)

// newStore is only an in-memory store for the objects given on stdin (no API server is involved), plus the CRD
// labels Cluster API's contract lookups read; Cluster API's webhooks, reconciler and generator read it as a client.
func newStore(objs []client.Object) client.Client {
	return fake.NewClientBuilder().
		WithScheme(scheme).
		WithObjects(append(objs, crds(objs)...)...).
		WithStatusSubresource(&clusterv1.ClusterClass{}).
		Build()
}

// kubeadmKinds are Cluster API's own provider kinds; their CRDs declare the v1beta1 and v1beta2 contracts at the
// API versions of the same names (the labels of their kustomizations).
var kubeadmKinds = []schema.GroupKind{
	{Group: bootstrapv1.GroupVersion.Group, Kind: "KubeadmConfig"},
	{Group: bootstrapv1.GroupVersion.Group, Kind: "KubeadmConfigTemplate"},
	{Group: controlplanev1.GroupVersion.Group, Kind: "KubeadmControlPlane"},
	{Group: controlplanev1.GroupVersion.Group, Kind: "KubeadmControlPlaneTemplate"},
}

// crds stand in for the CRDs of the kinds involved, with only the contract labels. Any kind other than Cluster
// API's own (capt's infrastructure kinds) implements the v1beta2 contract at the versions the request uses, and so
// does the kind a template of it stamps out (LocalMachineTemplate -> LocalMachine).
func crds(objs []client.Object) []client.Object {
	labels := map[schema.GroupKind]map[string]string{}
	for _, gk := range kubeadmKinds {
		labels[gk] = map[string]string{clusterv1.GroupVersion.Group + "/v1beta1": "v1beta1", clusterv1.GroupVersion.Group + "/v1beta2": "v1beta2"}
	}
	versions := map[schema.GroupKind][]string{}
	for _, o := range objs {
		gvk := o.GetObjectKind().GroupVersionKind()
		if _, own := labels[gvk.GroupKind()]; own || gvk.Group == clusterv1.GroupVersion.Group {
			continue
		}
		for _, kind := range []string{gvk.Kind, strings.TrimSuffix(gvk.Kind, "Template")} {
			gk := schema.GroupKind{Group: gvk.Group, Kind: kind}
			if !slices.Contains(versions[gk], gvk.Version) {
				versions[gk] = append(versions[gk], gvk.Version)
			}
		}
	}
	for gk, vs := range versions {
		labels[gk] = map[string]string{clusterv1.GroupVersion.Group + "/v1beta2": strings.Join(vs, "_")}
	}
	out := make([]client.Object, 0, len(labels))
	for gk, l := range labels {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		crd.SetName(contract.CalculateCRDName(gk.Group, gk.Kind))
		crd.SetLabels(l)
		out = append(out, crd)
	}
	return out
}
