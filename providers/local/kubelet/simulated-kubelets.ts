import type { V1Node, V1Pod } from '@kubernetes/client-node';
import type { KubeClient } from '../../../activities/kube/kube-client';
import type { KubeletRegistration } from '../layout';

const leaseSeconds = 40;
const statusEverySeconds = 10;

interface NodeState {
  registration: KubeletRegistration;
  lastStatus: number;
  nextPodIP: number;
}

/**
 * Kubelets without containers, as kwok runs them: each registers its Node, keeps its Lease and Ready
 * condition fresh, reports bound pods Running and Ready, and finishes deleting terminating pods once
 * their grace period is over. One instance serves every machine of a cluster.
 */
export class SimulatedKubelets {
  private readonly nodes = new Map<string, NodeState>();

  constructor(private readonly client: KubeClient) {}

  /** Reconciles the set of powered machines: new ones register, vanished or powered-off ones go silent. */
  async sync(registrations: KubeletRegistration[], now = Date.now()): Promise<void> {
    const wanted = new Set(registrations.map((r) => r.nodeName));
    for (const name of [...this.nodes.keys()]) if (!wanted.has(name)) this.nodes.delete(name);
    for (const registration of registrations) {
      if (!this.nodes.has(registration.nodeName)) {
        await this.client.registerNode(nodeObject(registration));
        this.nodes.set(registration.nodeName, { registration, lastStatus: 0, nextPodIP: 2 });
      }
    }
    for (const [name, state] of this.nodes) {
      if (now - state.lastStatus >= statusEverySeconds * 1000) {
        await this.client.renewNodeLease(name, name, leaseSeconds);
        await this.client.patchNodeStatus(name, { status: nodeStatus(state.registration, new Date(now)) });
        state.lastStatus = now;
      }
    }
    await this.syncPods(now);
  }

  private async syncPods(now: number): Promise<void> {
    if (this.nodes.size === 0) return;
    const pods = (await this.client.listPods()).filter((p) => p.spec?.nodeName && this.nodes.has(p.spec.nodeName));
    for (const pod of pods) {
      const { namespace, name, uid, deletionTimestamp } = pod.metadata!;
      if (deletionTimestamp) {
        // The apiserver sets deletionTimestamp to the end of the grace period.
        if (new Date(deletionTimestamp).getTime() <= now) await this.client.deletePodNow(namespace!, name!, uid!);
      } else if (pod.status?.phase !== 'Running' && pod.status?.phase !== 'Succeeded' && pod.status?.phase !== 'Failed') {
        await this.client.patchPodStatus(namespace!, name!, { status: runningStatus(pod, this.podIP(pod.spec!.nodeName!), new Date(now)) });
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
    metadata: { name: r.nodeName, labels: { 'kubernetes.io/hostname': r.nodeName, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', ...r.labels } },
    spec: { providerID: r.providerID, taints: r.taints },
  };
}

function nodeStatus(r: KubeletRegistration, now: Date): NonNullable<V1Node['status']> {
  const capacity = { cpu: '4', memory: '16Gi', pods: '110', 'ephemeral-storage': '100Gi' };
  const condition = (type: string, status: string, reason: string, message: string) => ({ type, status, reason, message, lastHeartbeatTime: now, lastTransitionTime: now });
  return {
    capacity,
    allocatable: capacity,
    addresses: [{ type: 'InternalIP', address: r.ip }, { type: 'Hostname', address: r.nodeName }],
    conditions: [
      condition('Ready', 'True', 'KubeletReady', 'kubelet is posting ready status (simulated by capt local provider)'),
      condition('MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'),
      condition('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
      condition('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
    ],
    nodeInfo: {
      kubeletVersion: r.kubeletVersion, kubeProxyVersion: r.kubeletVersion, containerRuntimeVersion: 'capt-simulated://1.0',
      operatingSystem: 'linux', architecture: 'amd64', osImage: 'capt local machine', kernelVersion: 'simulated',
      machineID: r.nodeName, systemUUID: r.nodeName, bootID: r.nodeName,
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
      name: c.name, image: c.image ?? '', imageID: `simulated://${c.image}`, ready: true, started: true, restartCount: 0,
      state: { running: { startedAt: now } },
    })),
  };
}
