package main

import (
	"context"

	"sigs.k8s.io/cluster-api/exp/topology/desiredstate"
)

// planRequest asks for the upgrade plan of a cluster whose control plane runs controlPlane and whose oldest
// workers run minWorkers ("" without workers), towards desired, with the ClusterClass's spec.kubernetesVersions.
type planRequest struct {
	ClassVersions []string `json:"classVersions"`
	Desired       string   `json:"desired"`
	ControlPlane  string   `json:"controlPlane"`
	MinWorkers    string   `json:"minWorkers"`
}

type planOutput struct {
	ControlPlane []string `json:"controlPlane"`
	Workers      []string `json:"workers"`
}

// compute runs the two steps of Cluster API's ComputeUpgradePlan that need no cluster: the class's plan function
// (one minor at most without a versions list), then the workers' default plan and the validation of both.
func (r *planRequest) compute(ctx context.Context) (*planOutput, error) {
	getPlan := desiredstate.GetUpgradePlanOneMinor
	if len(r.ClassVersions) > 0 {
		getPlan = desiredstate.GetUpgradePlanFromClusterClassVersions(r.ClassVersions)
	}
	controlPlane, workers, err := getPlan(ctx, r.Desired, r.ControlPlane, r.MinWorkers)
	if err != nil {
		return nil, invalid("", "", "", "%v", err)
	}
	workers, err = desiredstate.DefaultAndValidateUpgradePlans(r.Desired, r.ControlPlane, r.MinWorkers, controlPlane, workers)
	if err != nil {
		return nil, invalid("", "", "", "%v", err)
	}
	return &planOutput{ControlPlane: nonNil(controlPlane), Workers: nonNil(workers)}, nil
}
