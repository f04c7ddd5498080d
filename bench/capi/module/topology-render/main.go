// Command topology-render renders a ClusterClass-based Cluster (spec.topology) into the objects Cluster API's
// topology controller would create for it, with Cluster API's own code at the release this module pins: the
// conversion webhooks (v1beta1 -> v1beta2), the ClusterClass and Cluster admission webhooks, the ClusterClass
// reconciler (status.variables) and the desired-state generator with its patch engine. capt's TypeScript loader
// turns the result into the cluster model it runs.
//
// stdin:  {"objects": [the Cluster, its ClusterClass, every template the class references]}
// stdout: {"cluster", "infrastructureCluster", "controlPlane", "machineDeployments", "upgradePlan"}, exit 0;
//
//	or {"errors": [{"kind", "name", "field", "message"}]}, exit 1, when Cluster API (or a refusal of what capt
//	cannot run: Runtime SDK extensions, MachinePools) rejects the request;
//
// or stdin: {"upgradePlan": {"classVersions", "desired", "controlPlane", "minWorkers"}}
// stdout: {"controlPlane": [...], "workers": [...]}, exit 0, or {"errors": [{"message"}]}, exit 1: the chained
// upgrade plan Cluster API's topology controller computes (capt's own is compared with it);
//
// or stdin: {"convert": {"desiredAPIVersion", "objects"}}
// stdout: {"objects": [...]}, exit 0, or {"errors": [{"kind", "name", "message"}]}, exit 1: the objects (of the
// kinds capt's conversion webhook hands on: ClusterClass, MachinePool, MachineDrainRule, ClusterResourceSet(Binding),
// ExtensionConfig, IPAddress(Claim)) converted by Cluster API's own conversion functions;
//
// stderr: one line, exit 2, when stdin is not a request (not JSON, no Cluster or several, no topology, over 4 MiB);
// the Cluster webhook's admission warnings, if any, on success.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(context.Background(), os.Stdin, os.Stdout, os.Stderr))
}

// run is the whole command, streams and exit code included, so tests check the contract without a binary.
func run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) int {
	out, err := answer(ctx, stdin, stderr)
	if err == nil {
		return write(stdout, stderr, out, 0)
	}
	var bad malformedError
	if errors.As(err, &bad) {
		fmt.Fprintln(stderr, "topology-render:", bad.message)
		return 2
	}
	var refusal invalidError
	if !errors.As(err, &refusal) {
		refusal = invalidError{[]fieldError{{Message: err.Error()}}}
	}
	return write(stdout, stderr, map[string][]fieldError{"errors": refusal.errors}, 1)
}

// answer reads the request and computes its reply: the rendered topology (its admission warnings to stderr), or
// an upgrade plan.
func answer(ctx context.Context, stdin io.Reader, stderr io.Writer) (any, error) {
	req, err := readRequest(stdin)
	if err != nil {
		return nil, err
	}
	if req.UpgradePlan != nil {
		return req.UpgradePlan.compute(ctx)
	}
	if req.Convert != nil {
		return req.Convert.convert(ctx)
	}
	objs, err := readObjects(req)
	if err != nil {
		return nil, err
	}
	out, err := render(ctx, objs)
	if err != nil {
		return nil, err
	}
	for _, w := range out.warnings {
		fmt.Fprintln(stderr, "topology-render: warning:", w)
	}
	return out, nil
}

func write(stdout, stderr io.Writer, doc any, code int) int {
	if err := json.NewEncoder(stdout).Encode(doc); err != nil {
		fmt.Fprintln(stderr, "topology-render: cannot write stdout:", err)
		return 1
	}
	return code
}
