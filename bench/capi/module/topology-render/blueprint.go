package main

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/external"
	"sigs.k8s.io/cluster-api/exp/topology/scope"
)

// blueprint gathers the class and its templates as the topology controller's getBlueprint does
// (core/reconcilers/topology/cluster/blueprint.go, unexported there). MachinePool classes are left out: a Cluster
// using them is refused, so the generator never reads them.
func blueprint(ctx context.Context, store client.Reader, cluster *clusterv1.Cluster, class *clusterv1.ClusterClass) (*scope.ClusterBlueprint, error) {
	get := func(field string, ref clusterv1.ClusterClassTemplateReference) (*unstructured.Unstructured, error) {
		obj, err := external.Get(ctx, store, ref.ToObjectReference(class.Namespace))
		if err != nil {
			return nil, invalid("ClusterClass", class.Name, field, "%s %s/%s is not among the objects given (%v): add it to the request", ref.Kind, class.Namespace, ref.Name, err)
		}
		return obj, nil
	}
	bp := &scope.ClusterBlueprint{
		Topology:           cluster.Spec.Topology,
		ClusterClass:       class,
		ControlPlane:       &scope.ControlPlaneBlueprint{},
		MachineDeployments: map[string]*scope.MachineDeploymentBlueprint{},
		MachinePools:       map[string]*scope.MachinePoolBlueprint{},
	}
	var err error
	if bp.InfrastructureClusterTemplate, err = get("spec.infrastructure.templateRef", class.Spec.Infrastructure.TemplateRef); err != nil {
		return nil, err
	}
	if bp.ControlPlane.Template, err = get("spec.controlPlane.templateRef", class.Spec.ControlPlane.TemplateRef); err != nil {
		return nil, err
	}
	if bp.HasControlPlaneInfrastructureMachine() {
		ref := class.Spec.ControlPlane.MachineInfrastructure.TemplateRef
		if bp.ControlPlane.InfrastructureMachineTemplate, err = get("spec.controlPlane.machineInfrastructure.templateRef", ref); err != nil {
			return nil, err
		}
	}
	if bp.HasControlPlaneMachineHealthCheck() {
		bp.ControlPlane.HealthCheck = class.Spec.ControlPlane.HealthCheck
	}
	for i, mdClass := range class.Spec.Workers.MachineDeployments {
		md := &scope.MachineDeploymentBlueprint{HealthCheck: mdClass.HealthCheck}
		// The class's metadata, which the topology's own is layered over for each MachineDeployment.
		mdClass.Metadata.DeepCopyInto(&md.Metadata)
		path := fmt.Sprintf("spec.workers.machineDeployments[%d]", i)
		if md.InfrastructureMachineTemplate, err = get(path+".infrastructure.templateRef", mdClass.Infrastructure.TemplateRef); err != nil {
			return nil, err
		}
		if md.BootstrapTemplate, err = get(path+".bootstrap.templateRef", mdClass.Bootstrap.TemplateRef); err != nil {
			return nil, err
		}
		bp.MachineDeployments[mdClass.Class] = md
	}
	return bp, nil
}
