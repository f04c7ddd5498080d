import type { V1Node, V1Pod } from '@kubernetes/client-node';
import type { KubeletRegistration } from '../layout';
import { hasStatus, type KubeletApi } from './kube-api';

/** As the kubelet: a 40 s node Lease, renewed every quarter of that. */
const leaseSeconds = 40;
const renewEveryMs = 10_000;
/**
 * As the kubelet's nodeStatusReportFrequency: with the Lease as heartbeat an unchanged status is posted
 * every 5 minutes, not every 10 s (at 1000 nodes, 100 status patches a second less). After a renewal that
 * came late, at once: the node controller may have marked the Node Unknown meanwhile.
 */
const statusEveryMs = 300_000;
const lateAfterMs = 2 * renewEveryMs;
/**
 * Reports in flight at once (the API client's connections). At 16, with 5,000 Nodes and each write waiting on etcd,
 * one pass took minutes and every Lease went stale at once (real kubelets renew side by side; etcd commits
 * concurrent writes together).
 */
export const kubeletConcurrency = 64;

const leasesPath = '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases';

interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; resourceVersion?: string; managedFields?: unknown };
  spec: { holderIdentity: string; leaseDurationSeconds: number; renewTime: string };
}

interface NodeState {
  registration: KubeletRegistration;
  registered: boolean;
  /** The Lease as last written: a renewal is one update, without reading it first. */
  lease?: Lease;
  lastRenew: number;
  lastStatus: number;
  nextPodIP: number;
}

/** Lease times are MicroTime: the apiserver insists on six fractional digits. */
const microTime = (ms: number) => new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

/** Runs `work` on every item, at most `limit` at a time; returns the failures instead of stopping at the first. */
async function inParallel<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<Error[]> {
  const failures: Error[] = [];
  let next = 0;
  const lane = async () => {
    while (next < items.length) await work(items[next++]!).catch((err: Error) => void failures.push(err));
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return failures;
}

/**
 * Kubelets without containers, as kwok runs them: each registers its Node, keeps its Lease and Ready
 * condition fresh, reports bound pods Running and Ready, and finishes deleting terminating pods once
 * their grace period is over. One instance serves every machine of a cluster.
 */
export class SimulatedKubelets {
  private readonly nodes = new Map<string, NodeState>();

  constructor(private readonly api: KubeletApi) {}

  /** Reconciles the set of powered machines: new ones register, vanished or powered-off ones go silent. */
  async sync(registrations: KubeletRegistration[]): Promise<void> {
    const now = Date.now();
    const wanted = new Map(registrations.map((r) => [r.nodeName, r]));
    for (const name of [...this.nodes.keys()]) if (!wanted.has(name)) this.nodes.delete(name);
    for (const [name, registration] of wanted) {
      const known = this.nodes.get(name);
      if (!known) this.nodes.set(name, { registration, registered: false, lastRenew: 0, lastStatus: 0, nextPodIP: 2 });
      else if (
        known.registration.kubeletVersion !== registration.kubeletVersion ||
        known.registration.maxPods !== registration.maxPods
      ) {
        // Updated in place: the restarted kubelet posts its new version (and capacity) now, not at the next 5-minute status.
        known.registration = registration;
        known.lastStatus = 0;
      }
    }
    // Most urgent first, by when each must be written: a Lease before it expires, a new Node within a renewal period
    // (its machine waits for it, but an expired Lease makes a Ready Node NotReady, and new Nodes come by the thousand
    // in a large scale-up), an unchanged status when it is due.
    const deadline = (s: NodeState) =>
      s.registered ? Math.min(s.lastRenew + leaseSeconds * 1000, s.lastStatus + statusEveryMs) : now + renewEveryMs;
    const due = [...this.nodes.values()]
      .filter((s) => !s.registered || now - s.lastRenew >= renewEveryMs || now - s.lastStatus >= statusEveryMs)
      .sort((a, b) => deadline(a) - deadline(b));
    // One node's failure (its Node deleted under it, a dropped connection) must not hold up the others' heartbeats.
    const failures = await inParallel(due, kubeletConcurrency, (state) => this.report(state, now));
    await this.syncPods(now);
    if (failures.length > 0) throw failures[0]!;
  }

  /** A Node seen not Ready while its kubelet reports (see node-watch.ts): its status goes at the next sync. */
  nodeSeen(node: V1Node): void {
    const state = this.nodes.get(node.metadata?.name ?? '');
    const ready = node.status?.conditions?.find((c) => c.type === 'Ready')?.status;
    if (state?.registered && ready !== 'True') state.lastStatus = 0;
  }

  private async report(state: NodeState, now: number): Promise<void> {
    const { registration } = state;
    if (!state.registered) {
      // As the kubelet, the Node is created with its status: Ready from the start, and one request fewer.
      // Create-if-missing: a restarted agent re-registers its nodes the same way, then posts their status.
      const node = { ...nodeObject(registration), status: nodeStatus(registration, new Date(now)) };
      const created = await this.api.call('POST', '/api/v1/nodes', node).then(
        () => true,
        (err) => {
          if (!hasStatus(err, 409)) throw err;
          return false;
        },
      );
      state.registered = true;
      if (created) state.lastStatus = now;
    }
    const late = state.lastRenew > 0 && now - state.lastRenew >= lateAfterMs;
    if (now - state.lastRenew >= renewEveryMs) await this.renewLease(state, now);
    if (late || now - state.lastStatus >= statusEveryMs) {
      const path = `/api/v1/nodes/${encodeURIComponent(registration.nodeName)}/status`;
      await this.api.call(
        'PATCH',
        path,
        { status: nodeStatus(registration, new Date(now)) },
        'application/merge-patch+json',
      );
      state.lastStatus = now;
    }
  }

  private async renewLease(state: NodeState, now: number): Promise<void> {
    const name = state.registration.nodeName;
    const path = `${leasesPath}/${encodeURIComponent(name)}`;
    const spec = { holderIdentity: name, leaseDurationSeconds: leaseSeconds, renewTime: microTime(now) };
    const update = async (lease: Lease) => {
      const { managedFields: _, ...metadata } = lease.metadata;
      return this.api.call<Lease>('PUT', path, { ...lease, metadata, spec: { ...lease.spec, ...spec } });
    };
    const create = () =>
      this.api.call<Lease>('POST', leasesPath, {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name },
        spec,
      });
    try {
      state.lease = state.lease ? await update(state.lease) : await create();
    } catch (err) {
      // Gone (the garbage collector follows its Node) or written elsewhere (a restarted agent): create it, or update what is there.
      if (hasStatus(err, 404)) state.lease = await create();
      else if (hasStatus(err, 409)) state.lease = await update(await this.api.call<Lease>('GET', path));
      else throw err;
    }
    state.lastRenew = now;
  }

  private async syncPods(now: number): Promise<void> {
    if (this.nodes.size === 0) return;
    const { items } = await this.api.call<{ items: V1Pod[] }>('GET', '/api/v1/pods');
    for (const pod of items.filter((p) => p.spec?.nodeName && this.nodes.has(p.spec.nodeName))) {
      const { namespace, name, uid, deletionTimestamp } = pod.metadata!;
      const path = `/api/v1/namespaces/${encodeURIComponent(namespace!)}/pods/${encodeURIComponent(name!)}`;
      if (deletionTimestamp) {
        // The apiserver sets deletionTimestamp to the end of the grace period.
        if (new Date(deletionTimestamp).getTime() <= now) {
          // A body's DeleteOptions replace the query's, so the grace period must be in the body.
          await this.api.call('DELETE', path, { gracePeriodSeconds: 0, preconditions: { uid } }).catch((err) => {
            if (!hasStatus(err, 404, 409)) throw err;
          });
        }
      } else if (
        pod.status?.phase !== 'Running' &&
        pod.status?.phase !== 'Succeeded' &&
        pod.status?.phase !== 'Failed'
      ) {
        const status = runningStatus(pod, this.podIP(pod.spec!.nodeName!), new Date(now));
        await this.api.call('PATCH', `${path}/status`, { status }, 'application/merge-patch+json').catch((err) => {
          if (!hasStatus(err, 404)) throw err;
        });
      }
    }
  }

  private podIP(nodeName: string): string {
    const state = this.nodes.get(nodeName)!;
    const index = [...this.nodes.keys()].indexOf(nodeName);
    return `10.244.${index % 256}.${state.nextPodIP++ % 250}`;
  }
}

function nodeObject(r: KubeletRegistration): V1Node {
  return {
    metadata: {
      name: r.nodeName,
      labels: {
        'kubernetes.io/hostname': r.nodeName,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        ...r.labels,
      },
    },
    spec: { providerID: r.providerID, taints: r.taints },
  };
}

function nodeStatus(r: KubeletRegistration, now: Date): NonNullable<V1Node['status']> {
  const capacity = { cpu: '4', memory: '16Gi', pods: String(r.maxPods ?? 110), 'ephemeral-storage': '100Gi' };
  const condition = (type: string, status: string, reason: string, message: string) => ({
    type,
    status,
    reason,
    message,
    lastHeartbeatTime: now,
    lastTransitionTime: now,
  });
  return {
    capacity,
    allocatable: capacity,
    addresses: [
      { type: 'InternalIP', address: r.ip },
      { type: 'Hostname', address: r.nodeName },
    ],
    conditions: [
      condition('Ready', 'True', 'KubeletReady', 'kubelet is posting ready status (simulated by capt local provider)'),
      condition('MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'),
      condition('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
      condition('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
    ],
    nodeInfo: {
      kubeletVersion: r.kubeletVersion,
      kubeProxyVersion: r.kubeletVersion,
      containerRuntimeVersion: 'capt-simulated://1.0',
      operatingSystem: 'linux',
      architecture: 'amd64',
      osImage: 'capt local machine',
      kernelVersion: 'simulated',
      machineID: r.nodeName,
      systemUUID: r.nodeName,
      bootID: r.nodeName,
    },
  };
}

function runningStatus(pod: V1Pod, podIP: string, now: Date): NonNullable<V1Pod['status']> {
  const ready = (type: string) => ({ type, status: 'True', lastTransitionTime: now });
  return {
    phase: 'Running',
    podIP,
    podIPs: [{ ip: podIP }],
    hostIP: undefined,
    startTime: now,
    conditions: ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready'].map(ready),
    containerStatuses: (pod.spec?.containers ?? []).map((c) => ({
      name: c.name,
      image: c.image ?? '',
      imageID: `simulated://${c.image}`,
      ready: true,
      started: true,
      restartCount: 0,
      state: { running: { startedAt: now } },
    })),
  };
}
