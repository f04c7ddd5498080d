import {
  defaultNodeStartupTimeoutSeconds,
  type HealthCheckStatus,
  type Remediation,
  type UnhealthyReason,
} from './health-check';
import { MachinePhase, type NodeConditionState } from './machine';
import type { MachineRecord } from './owner';

/**
 * `capt health`: what a cluster health check is asked and what it answers. The answer is bounded whatever
 * the cluster's size (lists are capped, with counts of what was left out): at 1000 Nodes it stays a few KB.
 */
export interface ClusterHealthInput {
  namespace: string;
  cluster: string;
  /** host:port of the control-plane endpoint. */
  endpoint: string;
  /** The control plane's machines as its workflow records them: etcd members must be these. */
  controlPlaneMachines: { name: string; address?: string }[];
  /** What capt asked for, owner by owner, and how its machines stand: the Nodes are counted against it. */
  machinePools: MachinePoolHealth[];
}

/**
 * One owner's machines against what was asked of it: the control plane, a MachineDeployment, or the
 * cluster's standalone Machines (kind Machine, named after the cluster). Bounded: counts, and a few names.
 */
export interface MachinePoolHealth {
  kind: 'KubeadmControlPlane' | 'MachineDeployment' | 'Machine';
  name: string;
  /** Machines asked for. */
  replicas: number;
  /** Machines, not being deleted, whose Node is there (nodeRef set, Node not gone). */
  withNode: number;
  /** How long a machine may be without a Node: its MachineHealthCheck's nodeStartupTimeout, or Cluster API's default. */
  nodeStartupTimeoutSeconds: number;
  /** Machines without a Node for longer than that, oldest first: how many, and the first few by name. */
  pastStartup: number;
  pastStartupMachines: string[];
  /** Remediations not finished: the machine is still being deleted, or a machine made since has no Node yet. */
  remediating: { machine: string; reason: UnhealthyReason }[];
  /** Its status could not be read: nothing else about it is known. */
  error?: string;
}

/** Machines a pool names among those past their startup timeout. */
const poolMachinesNamed = 3;

/** A machine that counts as there for the Nodes asked for: Running (its Node appeared), not leaving, its Node not deleted. */
const hasNode = (m: MachineRecord) => m.phase === MachinePhase.Running && !m.deleting && !m.node?.gone;

/** An owner's machine records, as `capt health` judges them at `nowMs`. */
export function machinePoolHealth(
  owner: {
    kind: MachinePoolHealth['kind'];
    name: string;
    replicas: number;
    machines: MachineRecord[];
    healthCheck?: Pick<HealthCheckStatus, 'nodeStartupTimeoutSeconds' | 'remediations'>;
  },
  nowMs: number,
): MachinePoolHealth {
  // A check with the startup timeout off still leaves machines that never got a Node: Cluster API's default judges them.
  const timeout = owner.healthCheck?.nodeStartupTimeoutSeconds || defaultNodeStartupTimeoutSeconds;
  const withoutNode = owner.machines.filter((m) => !m.deleting && m.phase !== MachinePhase.Running);
  const past = withoutNode
    .filter((m) => nowMs - Date.parse(m.createdAt) > timeout * 1000)
    .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.name.localeCompare(b.name));
  return {
    kind: owner.kind,
    name: owner.name,
    replicas: owner.replicas,
    withNode: owner.machines.filter(hasNode).length,
    nodeStartupTimeoutSeconds: timeout,
    pastStartup: past.length,
    pastStartupMachines: past.slice(0, poolMachinesNamed).map((m) => m.name),
    remediating: remediationsUnderWay(owner.machines, owner.healthCheck?.remediations ?? [], withoutNode, timeout),
  };
}

/**
 * Remediations not finished: the remediated machine is still being deleted, or its replacement has no Node
 * yet. A replacement is made after its remediation, within the startup timeout; each machine without a
 * Node made so stands for one remediation, the newest first (a scale-up long after one does not).
 */
function remediationsUnderWay(
  machines: MachineRecord[],
  remediations: Remediation[],
  withoutNode: MachineRecord[],
  timeoutSeconds: number,
): MachinePoolHealth['remediating'] {
  const present = new Set(machines.map((m) => m.name));
  const underWay: Remediation[] = [];
  for (const r of [...remediations].reverse()) {
    const at = Date.parse(r.at);
    const replacements = withoutNode.filter((m) => {
      const made = Date.parse(m.createdAt);
      return made >= at && made - at <= timeoutSeconds * 1000;
    }).length;
    if (present.has(r.machine) || replacements > underWay.filter((u) => !present.has(u.machine)).length)
      underWay.push(r);
  }
  return underWay.reverse().map((r) => ({ machine: r.machine, reason: r.reason }));
}

/** The parts of a cluster a health check looks at, in the order problems are listed. */
export const ClusterHealthPart = {
  Etcd: 'etcd',
  Apiserver: 'kube-apiserver',
  ControllerManager: 'kube-controller-manager',
  Scheduler: 'kube-scheduler',
  Machines: 'machines',
  Nodes: 'nodes',
  SystemPods: 'kube-system pods',
} as const;
export type ClusterHealthPart = (typeof ClusterHealthPart)[keyof typeof ClusterHealthPart];

export interface HealthProblem {
  part: ClusterHealthPart;
  /** The machine, etcd member, Node or pod at fault; absent for a cluster-wide problem. */
  subject?: string;
  message: string;
}

/** One probe of a health endpoint: ok, or what it answered instead (an HTTP status and body, or a connection error). */
export interface ProbeResult {
  ok: boolean;
  detail?: string;
}

export interface MachineComponentsHealth {
  machine: string;
  address?: string;
  apiserver: ProbeResult;
  controllerManager: ProbeResult;
  scheduler: ProbeResult;
}

export interface EtcdMemberHealth {
  name: string;
  id: string;
  clientURL?: string;
  healthy: boolean;
  /** Why not, when not healthy: no answer, or the errors etcd reports (alarms). */
  detail?: string;
  leader?: boolean;
  dbSizeBytes?: number;
  dbSizeInUseBytes?: number;
}

export interface EtcdHealth {
  /** Set when no member answered the member list. */
  error?: string;
  members: EtcdMemberHealth[];
  leader?: string;
  /** The member names are exactly the control-plane machines' names. */
  membersMatchMachines: boolean;
  machines: string[];
}

export interface UnhealthyNode {
  name: string;
  /** Every condition of the Node, so its story reads whole (Ready Unknown with its pressure conditions Unknown too). */
  conditions: NodeConditionState[];
}

/** Requests of the Node's (or cluster's) pods that still run, against what is allocatable. */
export interface ResourceAllocation {
  resource: 'cpu' | 'memory' | 'pods';
  requested: number;
  allocatable: number;
  /** Rounded percent of allocatable requested. */
  percent: number;
}

export interface NodeAllocation {
  name: string;
  allocations: ResourceAllocation[];
}

export interface NodesHealth {
  /** Set when the Nodes could not be listed (the apiserver does not answer). */
  error?: string;
  total: number;
  ready: number;
  /** Nodes not Ready or under pressure; at most `listLimit`, the rest counted in `unhealthyOmitted`. */
  unhealthy: UnhealthyNode[];
  unhealthyOmitted: number;
  /** The whole cluster's requests against its allocatable resources. */
  allocated: ResourceAllocation[];
  /** The few Nodes whose requests are highest against their allocatable. */
  mostAllocated: NodeAllocation[];
}

export interface PodEvent {
  type: string;
  reason: string;
  message: string;
  count: number;
  last?: string;
}

export interface SystemPodProblem {
  name: string;
  phase: string;
  node?: string;
  /** Why it is not running: its condition's or container's reason and message. */
  reason?: string;
  /** Its last few events, newest last. */
  events: PodEvent[];
}

export interface SystemPodsHealth {
  error?: string;
  total: number;
  /** Pods neither Running nor Completed (Succeeded); at most `listLimit`. */
  problems: SystemPodProblem[];
  problemsOmitted: number;
}

export interface ClusterHealth {
  namespace: string;
  cluster: string;
  checkedAt: string;
  healthy: boolean;
  /** Everything wrong, most fundamental first (etcd, apiservers, components, Nodes, pods); capped like the lists. */
  problems: HealthProblem[];
  problemsOmitted: number;
  endpoint: { address: string; readyz: ProbeResult };
  controlPlane: MachineComponentsHealth[];
  etcd: EtcdHealth;
  /** Each owner's machines with a Node against those asked for (the check's input, judged with the rest). */
  machinePools: MachinePoolHealth[];
  nodes: NodesHealth;
  systemPods: SystemPodsHealth;
}

/** How many Nodes, pods or problems a report lists by name; the rest are counted. */
export const healthListLimit = 20;

/** Messages (conditions', events', probes') are cut to this many characters, so a report's size is its lists' lengths. */
export const healthMessageLimit = 200;
export const clipMessage = (text: string, max = healthMessageLimit) =>
  text.length > max ? `${text.slice(0, max - 1)}…` : text;
