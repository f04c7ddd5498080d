import type { NodeConditionState } from './machine';

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
}

/** The parts of a cluster a health check looks at, in the order problems are listed. */
export const ClusterHealthPart = {
  Etcd: 'etcd',
  Apiserver: 'kube-apiserver',
  ControllerManager: 'kube-controller-manager',
  Scheduler: 'kube-scheduler',
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
  nodes: NodesHealth;
  systemPods: SystemPodsHealth;
}

/** How many Nodes, pods or problems a report lists by name; the rest are counted. */
export const healthListLimit = 20;

/** Messages (conditions', events', probes') are cut to this many characters, so a report's size is its lists' lengths. */
export const healthMessageLimit = 200;
export const clipMessage = (text: string, max = healthMessageLimit) =>
  text.length > max ? `${text.slice(0, max - 1)}…` : text;
