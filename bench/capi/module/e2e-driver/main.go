// Command e2e-driver runs Cluster API's own e2e framework (sigs.k8s.io/cluster-api/test/framework, at the
// release this module pins) against a cluster already applied to a management API: the waiters its
// quick-start and cluster-upgrade specs use for the cluster, the control plane and the MachineDeployments'
// nodes, an upgrade of both, and the cluster's deletion. capt's tests run it against capt's objects, so the
// framework judges them as it judges Cluster API's own.
//
// The framework's waiters call Ginkgo's By, which exits outside a running suite, so the steps are the specs
// of one ordered Ginkgo container, run by RunSpecs from main, with Gomega failing through Ginkgo as in
// Cluster API's e2e suite. Each step prints `step NAME: passed|failed in DURATION`; the process exits 1 with
// the framework's failure message when one fails, and the steps after it are skipped.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cluster-api/test/framework"
)

// options are the driver's own flags; Ginkgo's (-ginkgo.*) are on the same command line.
type options struct {
	kubeconfig, namespace, cluster, upgradeTo string
	timeout, poll                             time.Duration
}

var opts options

func main() {
	flag.StringVar(&opts.namespace, "namespace", "default", "the Cluster's namespace")
	flag.StringVar(&opts.cluster, "cluster", "", "the Cluster's name (required)")
	flag.StringVar(&opts.upgradeTo, "upgrade-to", "", "the Kubernetes version to upgrade the control plane and the MachineDeployments to (required)")
	flag.DurationVar(&opts.timeout, "timeout", 10*time.Minute, "how long each waiter waits")
	flag.DurationVar(&opts.poll, "poll", 2*time.Second, "how often each waiter polls")
	flag.Parse()
	// controller-runtime, which the framework imports, registers -kubeconfig on the command line already.
	opts.kubeconfig = flag.Lookup("kubeconfig").Value.String()
	if opts.kubeconfig == "" || opts.cluster == "" || opts.upgradeTo == "" {
		fmt.Fprintln(os.Stderr, "e2e-driver: -kubeconfig, -cluster and -upgrade-to are required")
		flag.Usage()
		os.Exit(2)
	}
	gomega.RegisterFailHandler(ginkgo.Fail)
	suite, reporter := ginkgo.GinkgoConfiguration()
	// The framework's By and Logf lines stream as the steps run, as they do in Cluster API's CI logs.
	reporter.Verbose = true
	if !ginkgo.RunSpecs(suiteFailure{}, "capt: Cluster API's e2e framework", suite, reporter) {
		os.Exit(1)
	}
}

// suiteFailure is RunSpecs' testing.T: a failed suite is reported by the exit code alone.
type suiteFailure struct{}

func (suiteFailure) Fail() {}

// intervals are the framework's (timeout, polling) pair for its Eventually waiters.
func intervals() []interface{} { return []interface{}{opts.timeout, opts.poll} }

// newScheme holds the kinds the framework reads, as Cluster API's e2e suite builds it.
func newScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	framework.TryAddDefaultSchemes(scheme)
	return scheme
}
