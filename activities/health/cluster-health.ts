import type {
  ClusterHealth,
  ClusterHealthInput,
  NodesHealth,
  SystemPodsHealth,
} from '../../src/contract/cluster-health';
import type { KubeClient } from '../../src/kube/kube-client';
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

/** Pods that hold their requests: what the scheduler counts against a Node's allocatable. */
const holdingResources = 'status.phase!=Succeeded,status.phase!=Failed';

async function checkNodes(kube: KubeClient): Promise<NodesHealth> {
  return withinTimeout(Promise.all([kube.listNodes(), kube.listPods(holdingResources)]), 'listing Nodes and pods').then(
    ([nodes, pods]) => nodesHealth(nodes, pods),
    (err) => ({
      error: failedPart(err),
      total: 0,
      ready: 0,
      unhealthy: [],
      unhealthyOmitted: 0,
      allocated: [],
      mostAllocated: [],
    }),
  );
}

async function checkSystemPods(kube: KubeClient): Promise<SystemPodsHealth> {
  return withinTimeout(
    kube.listPods('metadata.namespace=kube-system').then((pods) => systemPodsHealth(kube, pods)),
    'listing kube-system pods',
  ).catch((err) => ({ error: failedPart(err), total: 0, problems: [], problemsOmitted: 0 }));
}

/**
 * `capt health cluster`: etcd, the apiservers, controller-managers and schedulers, the Nodes and the
 * kube-system pods, each checked on its own so one that fails (an apiserver without etcd) never hides
 * the others. Runs on a worker, which reads the cluster's credentials (admin kubeconfig, etcd CA) from its
 * cluster workflow. Read-only, so a retry repeats it harmlessly; its answer is bounded.
 */
export async function checkClusterHealth(input: ClusterHealthInput): Promise<ClusterHealth> {
  return heartbeating(async () => {
    const tls = await etcdClientTLS(input.namespace, input.cluster);
    const kube = await workloadClient(input.namespace, input.cluster);
    const machines = input.controlPlaneMachines;
    const [readyz, controlPlane, etcd, nodes, systemPods] = await Promise.all([
      endpointReadyz(input.endpoint),
      Promise.all(machines.map(machineComponents)),
      etcdHealth(machines, tls),
      checkNodes(kube),
      checkSystemPods(kube),
    ]);
    const endpoint = { address: input.endpoint, readyz };
    // A client older than the pools sends none: its check judges the rest as before.
    const machinePools = input.machinePools ?? [];
    const parts = { endpoint, controlPlane, etcd, machinePools, nodes, systemPods };
    const { problems, problemsOmitted } = healthProblems(parts);
    const { namespace, cluster } = input;
    return {
      namespace,
      cluster,
      checkedAt: new Date().toISOString(),
      healthy: problems.length === 0,
      problems,
      problemsOmitted,
      ...parts,
    };
  });
}
