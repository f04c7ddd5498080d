package main

import (
	"context"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/core/reconcilers/clusterclass"
	coreadmission "sigs.k8s.io/cluster-api/core/webhooks/admission"
	"sigs.k8s.io/cluster-api/exp/topology/desiredstate"
	"sigs.k8s.io/cluster-api/exp/topology/scope"
	"sigs.k8s.io/cluster-api/feature"
	"sigs.k8s.io/cluster-api/util/conditions"
)

func init() {
	// The webhooks refuse a topology unless ClusterTopology is on; with RuntimeSDK off nothing needs a runtime client.
	// capt carries out machine taints (Cluster API's alpha MachineTaintPropagation), so a class's and a topology's
	// are rendered onto the control plane and MachineDeployments rather than refused.
	if err := feature.MutableGates.SetFromMap(map[string]bool{
		string(feature.ClusterTopology):         true,
		string(feature.RuntimeSDK):              false,
		string(feature.MachineTaintPropagation): true,
	}); err != nil {
		panic(err)
	}
	// Cluster API logs through controller-runtime; a render reports through its result only.
	ctrl.SetLogger(logr.Discard())
}

// render computes the objects Cluster API's topology controller creates for a new Cluster, after the ClusterClass
// and the Cluster went through Cluster API's admission webhooks and the class through its reconciler.
func render(ctx context.Context, objs []*unstructured.Unstructured) (*output, error) {
	cluster, class, others, err := split(ctx, objs)
	if err != nil {
		return nil, err
	}
	if err := unsupported(cluster, class); err != nil {
		return nil, err
	}
	if _, err := (&coreadmission.ClusterClass{}).ValidateCreate(ctx, class); err != nil {
		return nil, refused("ClusterClass", class.Name, err)
	}
	store := newStore(append(others, class))
	// Read before the reconciler, which would report a missing template without its field path.
	bp, err := blueprint(ctx, store, cluster, class)
	if err != nil {
		return nil, err
	}
	if bp.ClusterClass, err = reconcileClass(ctx, store, class); err != nil {
		return nil, err
	}

	clusterWebhook := &coreadmission.Cluster{Client: store}
	if err := clusterWebhook.Default(ctx, cluster); err != nil {
		return nil, refused("Cluster", cluster.Name, err)
	}
	warnings, err := clusterWebhook.ValidateCreate(ctx, cluster)
	if err != nil {
		return nil, refused("Cluster", cluster.Name, err)
	}
	// The topology as the webhook defaulted it (variables with their schema defaults).
	bp.Topology = cluster.Spec.Topology

	s := scope.New(cluster)
	s.Blueprint = bp
	// A new Cluster: the topology controller's getCurrentState finds none of its objects.
	s.Current.ControlPlane = &scope.ControlPlaneState{}
	s.Current.MachineDeployments = scope.MachineDeploymentsStateMap{}
	s.Current.MachinePools = scope.MachinePoolsStateMap{}
	// No runtime client and no hook or upgrade-plan caches: only Runtime SDK hooks and extensions use them.
	generator, err := desiredstate.NewGenerator(store, noWorkloadClusters{}, nil, nil, nil)
	if err != nil {
		return nil, err
	}
	desired, err := generator.Generate(ctx, s)
	if err != nil {
		return nil, refused("Cluster", cluster.Name, err)
	}
	out, err := newOutput(ctx, s, desired)
	if err != nil {
		return nil, err
	}
	out.warnings = warnings
	return out, nil
}

// split finds the one Cluster and the class it names, both in v1beta2, and leaves the rest (templates) as given.
func split(ctx context.Context, objs []*unstructured.Unstructured) (*clusterv1.Cluster, *clusterv1.ClusterClass, []client.Object, error) {
	var clusters, classes []*unstructured.Unstructured
	var others []client.Object
	for _, o := range objs {
		switch o.GroupVersionKind().GroupKind() {
		case clusterv1.GroupVersion.WithKind("Cluster").GroupKind():
			clusters = append(clusters, o)
		case clusterv1.GroupVersion.WithKind("ClusterClass").GroupKind():
			classes = append(classes, o)
		default:
			others = append(others, o)
		}
	}
	if len(clusters) != 1 {
		return nil, nil, nil, malformed("stdin has %d Cluster objects: send exactly one, with its ClusterClass and templates", len(clusters))
	}
	c, err := toStorageVersion(ctx, clusters[0])
	if err != nil {
		return nil, nil, nil, invalid("Cluster", clusters[0].GetName(), "", "%v", err)
	}
	cluster := c.(*clusterv1.Cluster)
	if !cluster.Spec.Topology.IsDefined() {
		return nil, nil, nil, malformed("Cluster %s/%s has no spec.topology: only ClusterClass-based Clusters are rendered", cluster.Namespace, cluster.Name)
	}
	key := cluster.GetClassKey()
	for _, u := range classes {
		if u.GetName() != key.Name || u.GetNamespace() != key.Namespace {
			continue
		}
		cc, err := toStorageVersion(ctx, u)
		if err != nil {
			return nil, nil, nil, invalid("ClusterClass", u.GetName(), "", "%v", err)
		}
		return cluster, cc.(*clusterv1.ClusterClass), others, nil
	}
	return nil, nil, nil, invalid("Cluster", cluster.Name, "spec.topology.classRef",
		"ClusterClass %s is not among the objects given: add it and the templates it references", key)
}

// reconcileClass runs Cluster API's ClusterClass reconciler until it has written status.variables, its conditions
// and observedGeneration, which the Cluster webhook waits for before it defaults and validates the topology
// variables. The first pass only records the Paused condition and stops; in a manager the watch event of that
// write starts the second.
func reconcileClass(ctx context.Context, store client.Client, class *clusterv1.ClusterClass) (*clusterv1.ClusterClass, error) {
	key := client.ObjectKeyFromObject(class)
	reconciler := &clusterclass.Reconciler{Client: store}
	reconciled := &clusterv1.ClusterClass{}
	for range 2 {
		if _, err := reconciler.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
			return nil, refused("ClusterClass", class.Name, err)
		}
		if err := store.Get(ctx, key, reconciled); err != nil {
			return nil, err
		}
		if conditions.Has(reconciled, clusterv1.ClusterClassVariablesReadyCondition) {
			return reconciled, nil
		}
	}
	return nil, invalid("ClusterClass", class.Name, "status", "Cluster API's ClusterClass reconciler did not compute status.variables")
}
