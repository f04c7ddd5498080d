package main

import (
	"context"
	"fmt"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/test/framework"
)

// Each step prints its outcome and duration on one line, the failure message under a failed one, so a caller
// can tell how far the framework got without parsing Ginkgo's report.
var _ = ginkgo.ReportAfterEach(func(report ginkgo.SpecReport) {
	fmt.Printf("step %s: %s in %s\n", report.LeafNodeText, report.State, report.RunTime.Round(time.Millisecond))
	if report.Failed() {
		fmt.Printf("step %s failure: %s\n", report.LeafNodeText, report.Failure.Message)
	}
})

// The steps, in the order of Cluster API's quick-start spec (ApplyClusterTemplateAndWait's waiters, after the
// caller applied the manifest) and its cluster-upgrade spec, then its cleanup (DeleteClusterAndWait). Ordered:
// a step that fails skips the rest.
var _ = ginkgo.Describe("capt's objects", ginkgo.Ordered, func() {
	var (
		proxy        framework.ClusterProxy
		cluster      *clusterv1.Cluster
		controlPlane *controlplanev1.KubeadmControlPlane
		deployments  []*clusterv1.MachineDeployment
	)

	ginkgo.BeforeAll(func() {
		proxy = framework.NewClusterProxy("management", opts.kubeconfig, newScheme())
	})
	ginkgo.AfterAll(func(ctx context.Context) {
		if proxy != nil {
			proxy.Dispose(ctx)
		}
	})

	ginkgo.It("DiscoveryAndWaitForCluster", func(ctx context.Context) {
		cluster = framework.DiscoveryAndWaitForCluster(ctx, framework.DiscoveryAndWaitForClusterInput{
			Getter: proxy.GetClient(), Namespace: opts.namespace, Name: opts.cluster,
		}, intervals()...)
	})

	ginkgo.It("DiscoveryAndWaitForControlPlaneInitialized", func(ctx context.Context) {
		controlPlane = framework.DiscoveryAndWaitForControlPlaneInitialized(ctx,
			framework.DiscoveryAndWaitForControlPlaneInitializedInput{Lister: proxy.GetClient(), Cluster: cluster},
			intervals()...)
	})

	ginkgo.It("WaitForControlPlaneAndMachinesReady", func(ctx context.Context) {
		framework.WaitForControlPlaneAndMachinesReady(ctx, framework.WaitForControlPlaneAndMachinesReadyInput{
			GetLister: proxy.GetClient(), Cluster: cluster, ControlPlane: controlPlane,
		}, intervals()...)
	})

	ginkgo.It("DiscoveryAndWaitForMachineDeployments", func(ctx context.Context) {
		deployments = framework.DiscoveryAndWaitForMachineDeployments(ctx,
			framework.DiscoveryAndWaitForMachineDeploymentsInput{Lister: proxy.GetClient(), Cluster: cluster},
			intervals()...)
		gomega.Expect(deployments).NotTo(gomega.BeEmpty(), "Cluster %s has no MachineDeployment", opts.cluster)
	})

	ginkgo.It("UpgradeControlPlaneAndWaitForUpgrade", func(ctx context.Context) {
		upgradeControlPlane(ctx, proxy.GetClient(), cluster, controlPlane)
	})

	ginkgo.It("UpgradeMachineDeploymentsAndWait", func(ctx context.Context) {
		framework.UpgradeMachineDeploymentsAndWait(ctx, framework.UpgradeMachineDeploymentsAndWaitInput{
			ClusterProxy: proxy, Cluster: cluster, UpgradeVersion: opts.upgradeTo, MachineDeployments: deployments,
			WaitForMachinesToBeUpgraded: intervals(),
		})
	})

	// The cluster-upgrade spec's closing checks: every Node of the workload cluster (read through the
	// <cluster>-kubeconfig Secret) Ready at the new version, the Cluster Available, every Machine Ready.
	ginkgo.It("WaitForNodesReady", func(ctx context.Context) {
		workload := proxy.GetWorkloadCluster(ctx, cluster.Namespace, cluster.Name)
		defer workload.Dispose(ctx)
		framework.WaitForNodesReady(ctx, framework.WaitForNodesReadyInput{
			Lister: workload.GetClient(), KubernetesVersion: opts.upgradeTo,
			Count: expectedNodes(controlPlane, deployments), WaitForNodesReady: intervals(),
		})
		framework.VerifyClusterAvailable(ctx, framework.VerifyClusterAvailableInput{
			Getter: proxy.GetClient(), Name: cluster.Name, Namespace: cluster.Namespace,
		})
		framework.VerifyMachinesReady(ctx, framework.VerifyMachinesReadyInput{
			Lister: proxy.GetClient(), Name: cluster.Name, Namespace: cluster.Namespace,
		})
	})

	ginkgo.It("DeleteClusterAndWait", func(ctx context.Context) {
		deleteClusterAndWait(ctx, proxy, cluster)
	})
})

// upgradeControlPlane is UpgradeControlPlaneAndWaitForUpgrade without its workload-cluster image checks: the
// same patch of the KubeadmControlPlane's version, then the same WaitForControlPlaneMachinesToBeUpgraded.
// capt's local control planes run their components as processes of the version, with no kube-proxy
// DaemonSet, CoreDNS or etcd images for the helper's WaitForKubeProxyUpgrade (always called) to read.
func upgradeControlPlane(ctx context.Context, c client.Client, cluster *clusterv1.Cluster, cp *controlplanev1.KubeadmControlPlane) {
	helper, err := patch.NewHelper(cp, c)
	gomega.Expect(err).ToNot(gomega.HaveOccurred())
	cp.Spec.Version = opts.upgradeTo
	gomega.Eventually(func() error { return helper.Patch(ctx, cp) }, time.Minute, opts.poll).
		Should(gomega.Succeed(), "Failed to patch the new kubernetes version to KCP %s", cp.Name)
	framework.WaitForControlPlaneMachinesToBeUpgraded(ctx, framework.WaitForControlPlaneMachinesToBeUpgradedInput{
		Lister: c, Cluster: cluster, MachineCount: int(*cp.Spec.Replicas), KubernetesUpgradeVersion: opts.upgradeTo,
	}, intervals()...)
}

// deleteClusterAndWait is DeleteClusterAndWait's three parts: DeleteCluster, WaitForClusterDeleted, then every
// Cluster API object of the namespace gone (GetCAPIResources empty). The helper itself cannot be called: its
// argument check, Expect(input.Cluster).ToNot(BeEmpty()), fails on any *Cluster with this Gomega ("BeEmpty
// matcher expects a string/array/map/channel/slice/iterator"); Cluster API's own specs delete through
// DeleteAllClustersAndWait, which makes no such check, and neither checks what is left.
func deleteClusterAndWait(ctx context.Context, proxy framework.ClusterProxy, cluster *clusterv1.Cluster) {
	framework.DeleteCluster(ctx, framework.DeleteClusterInput{Deleter: proxy.GetClient(), Cluster: cluster})
	framework.WaitForClusterDeleted(ctx, framework.WaitForClusterDeletedInput{
		ClusterProxy: proxy, Cluster: cluster,
		// Read only to dump artifacts when ArtifactFolder is set, which the driver leaves empty.
		ClusterctlConfigPath: "unused",
	}, intervals()...)
	gomega.Eventually(func() []*unstructured.Unstructured {
		return framework.GetCAPIResources(ctx, framework.GetCAPIResourcesInput{
			Lister: proxy.GetClient(), Namespace: cluster.Namespace,
		})
	}, opts.timeout, opts.poll).Should(gomega.BeEmpty(), "There are still Cluster API resources in the %q namespace", cluster.Namespace)
}

// expectedNodes is the control plane's replicas and the MachineDeployments', as the upgrade spec counts them.
func expectedNodes(cp *controlplanev1.KubeadmControlPlane, deployments []*clusterv1.MachineDeployment) int {
	n := int(*cp.Spec.Replicas)
	for _, md := range deployments {
		n += int(*md.Spec.Replicas)
	}
	return n
}
