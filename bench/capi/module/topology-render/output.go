package main

import (
	"context"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"sigs.k8s.io/cluster-api/exp/topology/scope"
)

// output is stdout's document on success: every desired object, in Cluster API's storage versions.
type output struct {
	Cluster               client.Object             `json:"cluster"`
	InfrastructureCluster client.Object             `json:"infrastructureCluster"`
	ControlPlane          controlPlaneOutput        `json:"controlPlane"`
	MachineDeployments    []machineDeploymentOutput `json:"machineDeployments"`
	UpgradePlan           upgradePlan               `json:"upgradePlan"`
	// warnings are the Cluster webhook's admission warnings, written to stderr.
	warnings []string
}

type controlPlaneOutput struct {
	Object                        client.Object `json:"object"`
	InfrastructureMachineTemplate client.Object `json:"infrastructureMachineTemplate"`
	MachineHealthCheck            client.Object `json:"machineHealthCheck"`
}

type machineDeploymentOutput struct {
	TopologyName                  string        `json:"topologyName"`
	Object                        client.Object `json:"object"`
	BootstrapTemplate             client.Object `json:"bootstrapTemplate"`
	InfrastructureMachineTemplate client.Object `json:"infrastructureMachineTemplate"`
	MachineHealthCheck            client.Object `json:"machineHealthCheck"`
}

// upgradePlan is the upgrade tracker's plan: the versions the control plane and the MachineDeployments still step
// through (empty for a new Cluster, which is created at its topology version).
type upgradePlan struct {
	ControlPlane       []string `json:"controlPlane"`
	MachineDeployments []string `json:"machineDeployments"`
}

func newOutput(ctx context.Context, s *scope.Scope, desired *scope.ClusterState) (*output, error) {
	var err error
	// Absent objects (no health check, no machine infrastructure) are typed nil pointers: they become null.
	object := func(o client.Object) client.Object {
		if err != nil || reflect.ValueOf(o).IsNil() {
			return nil
		}
		var typed client.Object
		typed, err = withKind(ctx, o)
		return typed
	}
	out := &output{
		Cluster:               object(desired.Cluster),
		InfrastructureCluster: object(desired.InfrastructureCluster),
		ControlPlane: controlPlaneOutput{
			Object:                        object(desired.ControlPlane.Object),
			InfrastructureMachineTemplate: object(desired.ControlPlane.InfrastructureMachineTemplate),
			MachineHealthCheck:            object(desired.ControlPlane.MachineHealthCheck),
		},
		MachineDeployments: []machineDeploymentOutput{},
		UpgradePlan: upgradePlan{
			ControlPlane:       nonNil(s.UpgradeTracker.ControlPlane.UpgradePlan),
			MachineDeployments: nonNil(s.UpgradeTracker.MachineDeployments.UpgradePlan),
		},
	}
	names := make([]string, 0, len(desired.MachineDeployments))
	for name := range desired.MachineDeployments {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		md := desired.MachineDeployments[name]
		out.MachineDeployments = append(out.MachineDeployments, machineDeploymentOutput{
			TopologyName:                  name,
			Object:                        object(md.Object),
			BootstrapTemplate:             object(md.BootstrapTemplate),
			InfrastructureMachineTemplate: object(md.InfrastructureMachineTemplate),
			MachineHealthCheck:            object(md.MachineHealthCheck),
		})
	}
	return out, err
}

// withKind gives a typed object its apiVersion and kind, which Go types leave empty, and converts the kubeadm
// objects rendered from a v1beta1 template to v1beta2.
func withKind(ctx context.Context, o client.Object) (client.Object, error) {
	if u, ok := o.(*unstructured.Unstructured); ok {
		if c, ok := convertibles[u.GroupVersionKind().GroupKind()]; ok && u.GroupVersionKind().GroupVersion() != c.hub {
			return toStorageVersion(ctx, u)
		}
		return u, nil
	}
	gvk, err := apiutil.GVKForObject(o, scheme)
	if err != nil {
		return nil, err
	}
	o.GetObjectKind().SetGroupVersionKind(gvk)
	return o, nil
}

func nonNil(versions []string) []string {
	if versions == nil {
		return []string{}
	}
	return versions
}
