package main

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"sigs.k8s.io/cluster-api/controllers/clustercache"
)

// noWorkloadClusters is the ClusterCache the generator requires. A cluster being rendered has no workload cluster
// to reach; the generator only asks for one about MachinePools, which a render refuses, so any call is a bug here.
type noWorkloadClusters struct{}

var _ clustercache.ClusterCache = noWorkloadClusters{}

func errNoWorkloadCluster(cluster client.ObjectKey) error {
	return fmt.Errorf("topology-render has no workload cluster %s to connect to (only MachinePools need one, and they are refused)", cluster)
}

func (noWorkloadClusters) GetClient(_ context.Context, cluster client.ObjectKey) (client.Client, error) {
	return nil, errNoWorkloadCluster(cluster)
}

func (noWorkloadClusters) GetReader(_ context.Context, cluster client.ObjectKey) (client.Reader, error) {
	return nil, errNoWorkloadCluster(cluster)
}

func (noWorkloadClusters) GetUncachedClient(_ context.Context, cluster client.ObjectKey) (client.Client, error) {
	return nil, errNoWorkloadCluster(cluster)
}

func (noWorkloadClusters) GetRESTConfig(_ context.Context, cluster client.ObjectKey) (*rest.Config, error) {
	return nil, errNoWorkloadCluster(cluster)
}

func (noWorkloadClusters) Watch(_ context.Context, cluster client.ObjectKey, _ clustercache.Watcher) error {
	return errNoWorkloadCluster(cluster)
}

func (noWorkloadClusters) GetHealthCheckingState(context.Context, client.ObjectKey) clustercache.HealthCheckingState {
	return clustercache.HealthCheckingState{}
}

// GetClusterSource is for controllers' watches; a render sets up none, so it cannot return an error and panics.
func (noWorkloadClusters) GetClusterSource(string, func(context.Context, client.Object) []ctrl.Request, ...clustercache.GetClusterSourceOption) source.Source {
	panic("topology-render: GetClusterSource called, but a render sets up no controllers")
}
