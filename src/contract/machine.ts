import type { MachineStepReason } from './steps';
import type { UnknownSignal } from './unknown-signals';
import type { KubeadmConfigSpec } from './kubeadm-config-spec';

/** How a machine's bootstrap data runs kubeadm. */
export type BootstrapRole = 'init' | 'join-control-plane' | 'join';

/** When a deleted machine's Node gates give up waiting. */
export interface DeletionTimeouts {
  /** 0 or absent: no limit. */
  nodeDrainTimeoutSeconds?: number;
  nodeVolumeDetachTimeoutSeconds?: number;
  /** Default 10 s, as Cluster API's. */
  nodeDeletionTimeoutSeconds?: number;
}

/**
 * A taint a machine keeps on its Node (Cluster API v1.12's MachineTaint): `Always` is kept there and removed when
 * the machine no longer has it; `OnInitialization` is put there once, as the Node joins.
 */
export interface MachineTaint {
  key: string;
  value?: string;
  effect: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
  propagation: 'Always' | 'OnInitialization';
}

/** What a machine template (of a MachineDeployment, or a Machine's own spec) sets on a machine besides version, bootstrap and infrastructure. */
export interface MachineTemplateFields extends DeletionTimeouts {
  failureDomain?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** Absent: none (specs written before taints were carried have none). They change in place. */
  taints?: MachineTaint[];
}

/** A Machine's desired state, as the machine workflow receives it (plain JSON). */
export interface MachineSpec extends MachineTemplateFields {
  namespace: string;
  name: string;
  cluster: string;
  provider: string;
  role: 'control-plane' | 'worker';
  version: string;
  /** The cluster's network (Cluster.spec.clusterNetwork) reaches kubeadm's configuration through it. */
  bootstrap: {
    role: BootstrapRole;
    config: KubeadmConfigSpec;
    controlPlaneEndpoint: string;
    serviceSubnet?: string;
    podSubnet?: string;
    serviceDomain?: string;
  };
  infrastructure: { kind: string; spec: Record<string, unknown> };
  bootstrapTimeoutSeconds?: number;
  /** Workflow ID of the owner (MachineDeployment, control plane) told about phase changes. */
  owner?: string;
  /** The owner takes reports several to a signal (machineReportsSignal); older owners take one at a time. */
  batchedReports?: boolean;
  /** The owner takes those batches as an update (machineReportsUpdate); set by the owners of the build that does. */
  reportsByUpdate?: boolean;
  /**
   * Creates and bootstraps in one provider activity (provisionMachineInfrastructure). Set by the owners of the build
   * that does, so the histories of earlier machines replay with their two calls, without a patch's marker and
   * search-attribute write in every machine's history.
   */
  provisionInOneActivity?: boolean;
  /**
   * With provisionInOneActivity: the provisioning call renders the bootstrap data itself
   * (provisionBootstrappedMachine), so it is in no history. Set by the owners of the build that does, so earlier
   * machines' histories replay with their local activity.
   */
  bootstrapInProvisioning?: boolean;
  /**
   * Keeps its status as of each report in its reportedStatus memo (machine-messages.ts). Set by the owners of the
   * build that reads it, so the histories of earlier machines replay without it.
   */
  statusMemo?: boolean;
}

/** The fields a running Machine accepts in place; anything else means a new Machine. */
export type MachineSpecChange = Partial<
  Pick<MachineSpec, 'labels' | 'annotations' | 'taints' | keyof DeletionTimeouts>
> &
  Partial<Pick<MachineSpec, 'version' | 'bootstrap' | 'infrastructure' | 'failureDomain'>>;

export const MachinePhase = {
  Pending: 'Pending',
  Provisioning: 'Provisioning',
  Provisioned: 'Provisioned',
  Running: 'Running',
  Deleting: 'Deleting',
  Deleted: 'Deleted',
  Failed: 'Failed',
} as const;
export type MachinePhase = (typeof MachinePhase)[keyof typeof MachinePhase];

/**
 * The phase as owners and the visibility store see it: every phase before Running reads Provisioning.
 * Passing those early phases is no news to anyone but the machine; each would cost a report and an upsert.
 */
export const coarsePhase = (phase: MachinePhase): MachinePhase =>
  phase === MachinePhase.Pending || phase === MachinePhase.Provisioned ? MachinePhase.Provisioning : phase;

/** The deletion gates, in the order Cluster API passes them. */
export const DeletionGate = {
  PreDrainHooks: 'WaitingForPreDrainHook',
  Drain: 'Draining',
  VolumeDetach: 'WaitingForVolumeDetach',
  PreTerminateHooks: 'WaitingForPreTerminateHook',
  Infrastructure: 'DeletingInfrastructure',
  Node: 'DeletingNode',
  Done: 'Deleted',
} as const;
export type DeletionGate = (typeof DeletionGate)[keyof typeof DeletionGate];

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

/**
 * Every condition capt sets on a Machine: the machine workflow's, Deleting while it is deleted, and Available and
 * UpToDate, which the bridge adds as Cluster API v1beta2 does.
 */
export const machineConditionTypes = [
  'Ready',
  'BootstrapConfigReady',
  'InfrastructureReady',
  'BootstrapExecSucceeded',
  'NodeReady',
  'NodeHealthy',
  'Deleting',
  'Available',
  'UpToDate',
  'Updating',
] as const;
export type MachineConditionType = (typeof machineConditionTypes)[number];

/**
 * A Machine's NodeReady, as Cluster API's machine controller sets it: Unknown until the machine has a Node, False
 * once that Node is deleted, else the Node's own Ready.
 */
export function nodeReadyStatus(
  hasNode: boolean,
  node: { ready: Condition['status']; gone?: boolean } | undefined,
): Condition['status'] {
  if (!hasNode) return 'Unknown';
  if (node?.gone) return 'False';
  return node?.ready ?? 'Unknown';
}

/** The conditions Kubernetes itself sets, in their healthy state; any other condition's healthy state is unknown to capt. */
export const healthyNodeConditionStates: Record<string, string> = {
  Ready: 'True',
  MemoryPressure: 'False',
  DiskPressure: 'False',
  PIDPressure: 'False',
  NetworkUnavailable: 'False',
};

/** Whether capt keeps this condition of a Node: every one not in its known healthy state (custom ones always). */
export const keptNodeCondition = (c: { type: string; status: string }) =>
  healthyNodeConditionStates[c.type] !== c.status;

/** A Node condition capt keeps (see keptNodeCondition), since it last changed. */
export interface NodeConditionState {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  since: string;
}

/** The machine's Node as the cluster's Node watch last saw it: Ready, the conditions not healthy, or gone. */
export interface NodeHealth {
  ready: 'True' | 'False' | 'Unknown';
  message?: string;
  /** Only the conditions kept (keptNodeCondition); absent or empty on a healthy Node without custom conditions. */
  conditions?: NodeConditionState[];
  /** The Node was deleted while the machine still exists. */
  gone?: boolean;
}

/** What an owner keeps of a Node that is not healthy (what a MachineHealthCheck checks); absent when healthy. */
export interface NodeHealthRecord {
  conditions: Pick<NodeConditionState, 'type' | 'status' | 'since'>[];
  gone?: boolean;
}

/** The owner's view of a Node's health, or undefined when nothing about it is unhealthy. */
export function nodeHealthRecord(health: NodeHealth | undefined): NodeHealthRecord | undefined {
  const conditions = (health?.conditions ?? []).map(({ type, status, since }) => ({ type, status, since }));
  if (!health?.gone && conditions.length === 0) return undefined;
  return { conditions, ...(health?.gone ? { gone: true } : {}) };
}

/**
 * A Node's `status.nodeInfo` (core/v1 NodeSystemInfo), as Cluster API copies it to its Machine's status: the
 * kubelet writes it, so each string is cut to nodeInfoMaxLength before a workflow keeps it.
 */
export interface NodeSystemInfo {
  machineID: string;
  systemUUID: string;
  bootID: string;
  kernelVersion: string;
  osImage: string;
  containerRuntimeVersion: string;
  kubeletVersion: string;
  kubeProxyVersion: string;
  operatingSystem: string;
  architecture: string;
  /** Bytes of swap, when the kubelet reports it. */
  swap?: { capacity?: number };
}

/** The longest string of a NodeSystemInfo kept; real ones (a kernel release, an OS image's name) are far shorter. */
export const nodeInfoMaxLength = 128;

/** What the drain activity reports while it works. */
export interface DrainProgress {
  evicted: number;
  remaining: number;
  /** Sorted, human-readable reasons the drain cannot finish yet (budgets, terminating pods). */
  blocked: string[];
  warnings: string[];
}

export interface MachineStatus {
  namespace: string;
  name: string;
  cluster: string;
  phase: MachinePhase;
  version: string;
  providerID?: string;
  nodeRef?: string;
  /** Its Node's system info, as it was when the Node became Ready. */
  nodeInfo?: NodeSystemInfo;
  addresses: string[];
  failureDomain?: string;
  createdAt: string;
  conditions: Condition[];
  step: string;
  stepReason: MachineStepReason;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** The taints it keeps on its Node; absent when it has none. */
  taints?: MachineTaint[];
  /** Grows with every report to the owner: signals may arrive out of order, and the owner keeps the newest. */
  sequence: number;
  /** Signals it had no handler for (sent by newer code, or by mistake): ignored, and kept here so they are seen. */
  unknownSignals?: UnknownSignal[];
}

/** Annotations and labels with meaning to the machine lifecycle (Cluster API's names). */
export const preDrainHookPrefix = 'pre-drain.delete.hook.machine.cluster.x-k8s.io';
export const preTerminateHookPrefix = 'pre-terminate.delete.hook.machine.cluster.x-k8s.io';
/**
 * On every control-plane machine, as Cluster API's KubeadmControlPlane sets it: a machine deleted by anyone
 * but its control plane waits before termination until the control plane has taken it out of the endpoint
 * and etcd. A deletion its owner asks for releases it (the owner has cleaned up first).
 */
export const controlPlaneCleanupHook = `${preTerminateHookPrefix}/kcp-cleanup`;
export const excludeNodeDrainingAnnotation = 'machine.cluster.x-k8s.io/exclude-node-draining';
export const excludeVolumeDetachAnnotation = 'machine.cluster.x-k8s.io/exclude-wait-for-node-volume-detach';
export const remediateMachineAnnotation = 'cluster.x-k8s.io/remediate-machine';
export const skipRemediationAnnotation = 'cluster.x-k8s.io/skip-remediation';
/** On the Node, as Cluster API sets it: the machine it belongs to (the cluster's Node watch finds the machine by it). */
export const nodeMachineAnnotation = 'cluster.x-k8s.io/machine';

/**
 * What a machine tells its owner: only the fields the owner plans with, sent only when one of them
 * changes (a few times in a machine's life), so an owner of 1000 machines stays small.
 */
export interface MachineReport {
  name: string;
  /** Running, Failed, Deleting and Deleted as they are; every phase before Running reads Provisioning. */
  phase: MachinePhase;
  /** The machine's first address, once it has one (the control plane reaches etcd and apiservers there). */
  address?: string;
  /** Carries cluster.x-k8s.io/delete-machine: scale-down takes it first. */
  marked: boolean;
  /** Why it is stuck, in one short line: a drain held by a budget, a failed bootstrap. */
  blocker?: string;
  /** Its Node's health once Running, when anything about it is unhealthy. */
  node?: NodeHealthRecord;
  /** Carries cluster.x-k8s.io/remediate-machine: a MachineHealthCheck remediates it. */
  remediate?: boolean;
  /** Carries cluster.x-k8s.io/skip-remediation: no MachineHealthCheck remediates it. */
  skipRemediation?: boolean;
  /** Updating in place (see in-place.ts): not available until it reports its new version without this. */
  updating?: true;
  /** The version it runs, told only by a machine that was ever updated in place (before, its owner's record says it). */
  version?: string;
  /** The MachineSet its last in-place update moved it to, told with `version` by machines of builds that say it. */
  templateHash?: string;
  /** Grows with every report: signals may arrive out of order, and the owner keeps the newest. */
  sequence: number;
}

/**
 * An owner's template (a MachineDeployment's, a control plane's, a Machine's own) changed in place: the
 * machine swaps the old template's keys for the new ones.
 */
export interface MachineTemplateChange {
  previous: Pick<MachineSpec, 'labels' | 'annotations'>;
  next: Omit<MachineTemplateFields, 'failureDomain'>;
}

/** The annotation that orders a machine out first on scale-down. */
export const deleteMachineAnnotation = 'cluster.x-k8s.io/delete-machine';
