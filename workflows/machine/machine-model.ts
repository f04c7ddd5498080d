import type { BootstrapRole } from '../../activities/bootstrap/cloud-config-renderer';
import type { KubeadmConfigSpec } from '../../activities/bootstrap/kubeadm-config-spec';

/** A Machine's desired state, as the machine workflow receives it (plain JSON). */
export interface MachineSpec {
  namespace: string;
  name: string;
  cluster: string;
  provider: string;
  role: 'control-plane' | 'worker';
  version: string;
  bootstrap: { role: BootstrapRole; config: KubeadmConfigSpec; controlPlaneEndpoint: string };
  infrastructure: { kind: string; spec: Record<string, unknown> };
  failureDomain?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** 0 or absent: no limit. */
  nodeDrainTimeoutSeconds?: number;
  nodeVolumeDetachTimeoutSeconds?: number;
  /** Default 10 s, as Cluster API's. */
  nodeDeletionTimeoutSeconds?: number;
  bootstrapTimeoutSeconds?: number;
  /** Workflow ID of the owner (MachineDeployment, control plane) told about phase changes. */
  owner?: string;
}

/** The fields a running Machine accepts in place; anything else means a new Machine. */
export type MachineSpecChange = Partial<Pick<MachineSpec, 'labels' | 'annotations' | 'nodeDrainTimeoutSeconds' | 'nodeVolumeDetachTimeoutSeconds' | 'nodeDeletionTimeoutSeconds'>> &
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

/** The deletion gates, in the order Cluster API passes them. */
export const DeletionGate = {
  PreDrainHooks: 'WaitingForPreDrainHook',
  Drain: 'Draining',
  VolumeDetach: 'WaitingForVolumeDetach',
  PreTerminateHooks: 'WaitingForPreTerminateHook',
  Infrastructure: 'DeletingInfrastructure',
  BootstrapData: 'DeletingBootstrapData',
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

/** What the drain activity reports while it works. */
export interface DrainProgress {
  evicted: number;
  remaining: number;
  /** Sorted, human-readable reasons the drain cannot finish yet (budgets, terminating pods). */
  blocked: string[];
  warnings: string[];
}

/** Everything the machine workflow knows, as plain JSON: it survives continue-as-new unchanged. */
export interface MachineState {
  spec: MachineSpec;
  createdAt: string;
  bootstrapDataReady: boolean;
  infrastructure?: { providerID: string; addresses: string[] };
  bootstrap?: { state: 'succeeded' } | { state: 'failed'; command: string; exitCode: number; output: string };
  nodeRef?: { name: string };
  node?: { ready: 'True' | 'False' | 'Unknown'; message?: string };
  nodeSynced: boolean;
  /** Labels or annotations changed since the Node was last synced. */
  nodeSyncPending: boolean;
  /** A non-retryable failure outside bootstrap (an unsupported version, say): the machine waits to be deleted. */
  failure?: { reason: string; message: string };
  deletion?: {
    requestedAt: string;
    clusterDeleting: boolean;
    gate: DeletionGate;
    gateStartedAt: string;
    drainStartedAt?: string;
    drainSkipped?: string;
    drain?: DrainProgress;
    volumeDetachStartedAt?: string;
    message?: string;
  };
  /** What the workflow is doing now and, when stuck, why: shown as current details in the UI. */
  step: string;
  /** How many status reports went to the owner. */
  reports?: number;
}

export interface MachineStatus {
  namespace: string;
  name: string;
  cluster: string;
  phase: MachinePhase;
  version: string;
  providerID?: string;
  nodeRef?: string;
  addresses: string[];
  failureDomain?: string;
  createdAt: string;
  conditions: Condition[];
  step: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** Grows with every report to the owner: signals may arrive out of order, and the owner keeps the newest. */
  sequence: number;
}

/** Annotations and labels with meaning to the machine lifecycle (Cluster API's names). */
export const preDrainHookPrefix = 'pre-drain.delete.hook.machine.cluster.x-k8s.io';
export const preTerminateHookPrefix = 'pre-terminate.delete.hook.machine.cluster.x-k8s.io';
export const excludeNodeDrainingAnnotation = 'machine.cluster.x-k8s.io/exclude-node-draining';
export const excludeVolumeDetachAnnotation = 'machine.cluster.x-k8s.io/exclude-wait-for-node-volume-detach';
