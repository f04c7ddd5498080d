import { ApplicationFailure } from '@temporalio/common';
import type { ClusterHealth, ClusterHealthInput, NodesHealth, SystemPodsHealth } from '../../src/contract/cluster-health';
import { heartbeating } from '../../src/util/heartbeat-poll';
import { etcdClientTLS } from '../etcd/etcd-credentials';
import { workloadClient } from '../kube/workload-cluster';
import { endpointReadyz, machineComponents } from './component-health';
import { etcdHealth } from './etcd-health';
import { healthProblems } from './health-problems';
import { nodesHealth } from './node-health';
import { systemPodsHealth } from './system-pods';

/** An apiserver that lost etcd may hold a list for a minute; a health check says so sooner. */
const kubeTimeoutMs = 10_000;

function withinTimeout<T>(work: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${kubeTimeoutMs / 1000} s`)), kubeTimeoutMs);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

const failedPart = (err: unknown) => (err as Error).message.split('\n')[0]!;

/**
 * `capt health cluster`: etcd, the apiservers, controller-managers and schedulers, the Nodes and the
 * kube-system pods, each checked on its own so one that fails (an apiserver without etcd) never hides
 * the others. Runs on a worker because the cluster's credentials (admin kubeconfig, etcd CA) live only in
 * the workers' secret store. Read-only, so a retry repeats it harmlessly; its answer is bounded.
 */
export async function checkClusterHealth(input: ClusterHealthInput): Promise<ClusterHealth> {
  return heartbeating(async () => {
    const tls = await etcdClientTLS(input.namespace, input.cluster).catch((err: Error) => {
      throw ApplicationFailure.nonRetryable(
        `cluster ${input.namespace}/${input.cluster} has no certificate authority in this worker's secret store (${err.message}); it is not created yet or already deleted`,
        'ClusterSecretsMissing',
      );
    });
    const kube = await workloadClient(input.namespace, input.cluster);
    const nodes = (): Promise<NodesHealth> => withinTimeout(Promise.all([kube.listNodes(), kube.listPods('status.phase!=Succeeded,status.phase!=Failed')]), 'listing Nodes and pods')
      .then(([list, pods]) => nodesHealth(list, pods), (err) => ({ error: failedPart(err), total: 0, ready: 0, unhealthy: [], unhealthyOmitted: 0, allocated: [], mostAllocated: [] }));
    const systemPods = (): Promise<SystemPodsHealth> => withinTimeout(kube.listPods('metadata.namespace=kube-system').then((pods) => systemPodsHealth(kube, pods)), 'listing kube-system pods')
      .catch((err) => ({ error: failedPart(err), total: 0, problems: [], problemsOmitted: 0 }));
    const [readyz, controlPlane, etcd, nodesPart, systemPodsPart] = await Promise.all([
      endpointReadyz(input.endpoint), Promise.all(input.controlPlaneMachines.map(machineComponents)), etcdHealth(input.controlPlaneMachines, tls), nodes(), systemPods(),
    ]);
    const parts = { endpoint: { address: input.endpoint, readyz }, controlPlane, etcd, nodes: nodesPart, systemPods: systemPodsPart };
    const { problems, problemsOmitted } = healthProblems(parts);
    return { namespace: input.namespace, cluster: input.cluster, checkedAt: new Date().toISOString(), healthy: problems.length === 0, problems, problemsOmitted, ...parts };
  });
}
