import type { ClusterStepReason } from './steps';
import type { Condition } from './machine';
import type { MachineRecord, OwnerStatus, OwnerSummary } from './owner';
import type { OwnerRecovery } from './owner-recovery';
import type { UnknownSignal } from './unknown-signals';

/** On a Cluster, as spec.paused: Cluster API's way (clusterctl move uses it) to stop every controller acting on its objects. */
export const pausedAnnotation = 'cluster.x-k8s.io/paused';

/** What the cluster workflow's status query answers: its own state and its children's summaries. */
export interface ClusterStatus {
  namespace: string;
  name: string;
  provider: string;
  phase: 'Provisioning' | 'Provisioned' | 'Deleting' | 'Deleted' | 'Failed';
  version: string;
  endpoint: string;
  createdAt: string;
  controlPlane?: OwnerSummary;
  machineDeployments: OwnerSummary[];
  /** Its standalone Machines (outside any MachineDeployment), as compact records. */
  machines: MachineRecord[];
  conditions: Condition[];
  step: string;
  stepReason: ClusterStepReason;
  /** Cluster.spec.paused or the cluster.x-k8s.io/paused annotation: nothing is carried out until unpaused. */
  paused: boolean;
  /** The ClusterClass a cluster made from a topology was rendered from. */
  clusterClass?: string;
  /** Its maintenance window as annotated, and the owners held for it (maintenance-window.ts). */
  maintenanceWindow?: { window: string; held: string[] };
  /**
   * A ClusterClass cluster's upgrade under way: the versions not yet given to the control plane (a chained upgrade
   * steps one minor at a time) and to the workers, as Cluster API's status.controlPlane/workers.upgradePlan.
   */
  upgradePlan?: { controlPlane: string[]; workers: string[] };
  /** Grows with every apply that changes something (as metadata.generation). */
  generation: number;
  /** The generation every owner has received; the status describes that spec once it equals `generation`. */
  observedGeneration: number;
  /** What an applied change still waits for, per owner; empty once every change is carried out. */
  pending: PendingChange[];
  /** Owners whose workflow was lost and rebuilt, newest last (a few kept). */
  recoveries: OwnerRecovery[];
  /** Signals it had no handler for (sent by newer code, or by mistake): ignored, and kept here so they are seen. */
  unknownSignals?: UnknownSignal[];
}

/** An owner whose applied change is not carried out yet, and why. */
export interface PendingChange {
  kind: OwnerSummary['kind'];
  name: string;
  /** The cluster generation that changed this owner. */
  generation: number;
  /**
   * HeldForControlPlane: workers wait until the control plane runs the new version (kubelets may not be newer
   * than the apiserver). HeldForTopologyOrder: a ClusterClass cluster's workers then take it in topology order.
   */
  reason: 'NotReceived' | 'HeldForControlPlane' | 'HeldForTopologyOrder' | 'ClusterPaused' | 'RollingOut';
  message: string;
}

/** A change the owner has not started on: held back, or not received yet (as opposed to rolling out). */
export const waitingToStart = (p: PendingChange) => p.reason !== 'RollingOut';

/** A cluster as the client shows it: its status with each owner's full status, read from the owner itself. */
export interface ClusterView extends Omit<ClusterStatus, 'controlPlane' | 'machineDeployments'> {
  controlPlane?: OwnerStatus;
  machineDeployments: OwnerStatus[];
}

/** Template hashes a cluster's owners run now, which an undo may have moved away from the last manifest's. */
export interface RunningTemplates {
  controlPlane?: string;
  machineDeployments: Record<string, string | undefined>;
}

/** What `capt kubeconfig` needs besides the private key it keeps: where the cluster is and a certificate for that key. */
export interface AdminCredentials {
  clusterName: string;
  user: string;
  /** https://host:port of the control-plane endpoint. */
  server: string;
  caCert: string;
  cert: string;
}
