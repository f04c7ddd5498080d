package main

import (
	"fmt"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// unsupported lists what a render refuses because capt has nothing to run it: Runtime SDK extensions (external
// patches, an upgrade plan extension) and MachinePools. A class may still define MachinePool classes; a Cluster
// that uses none never reaches them.
func unsupported(cluster *clusterv1.Cluster, class *clusterv1.ClusterClass) error {
	var out []fieldError
	for i, p := range class.Spec.Patches {
		if p.External != nil {
			out = append(out, fieldError{Kind: "ClusterClass", Name: class.Name, Field: fmt.Sprintf("spec.patches[%d].external", i),
				Message: fmt.Sprintf("patch %q calls a Runtime SDK extension, which capt does not run: use inline definitions (jsonPatches)", p.Name)})
		}
	}
	if ext := class.Spec.Upgrade.External.GenerateUpgradePlanExtension; ext != "" {
		out = append(out, fieldError{Kind: "ClusterClass", Name: class.Name, Field: "spec.upgrade.external.generateUpgradePlanExtension",
			Message: fmt.Sprintf("upgrade plans from the Runtime SDK extension %q are not supported by capt: list spec.kubernetesVersions instead", ext)})
	}
	if len(cluster.Spec.Topology.Workers.MachinePools) > 0 {
		out = append(out, fieldError{Kind: "Cluster", Name: cluster.Name, Field: "spec.topology.workers.machinePools",
			Message: "capt does not run MachinePools: use spec.topology.workers.machineDeployments"})
	}
	if len(out) > 0 {
		return invalidError{out}
	}
	return nil
}
