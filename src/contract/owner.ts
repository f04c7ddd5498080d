import type { InPlaceCapability } from './in-place';
import type { HealthCheckStatus } from './health-check';
import type { OwnerStepReason } from './steps';
import type { Condition, MachinePhase, NodeHealthRecord } from './machine';
import type { UnknownSignal } from './unknown-signals';

/**
 * What an owner (control plane, MachineDeployment) keeps of each of its machines: what planning needs
 * and nothing more, so 1000 records stay far below Temporal's payload limits. Conditions, Node info and
 * steps live in the machine workflow and are read on demand (its status query).
 */
export interface MachineRecord {
  name: string;
  /** The template hash (MachineSet) the machine was created from. */
  templateHash: string;
  version: string;
  /** The failure domain it was placed in, if its cluster declares any. */
  failureDomain?: string;
  createdAt: string;
  phase: MachinePhase;
  address?: string;
  /** Set by the owner when it deletes the machine, or when the machine reports it is being deleted. */
  deleting: boolean;
  /** Carries cluster.x-k8s.io/delete-machine. */
  marked: boolean;
  blocker?: string;
  /** Its Node's health, when anything about it is unhealthy. */
  node?: NodeHealthRecord;
  remediate?: boolean;
  skipRemediation?: boolean;
  /** When the owner first saw it Running: it counts as available minReadySeconds later. */
  runningSince?: string;
  /**
   * The owner asked it to take `version` (and `templateHash`) in place: neither running nor available until it
   * reports that version without updating, and then runningSince starts again.
   */
  updating?: true;
  /** The newest report applied. */
  sequence: number;
}

/**
 * What an owner tells its cluster: the fields the cluster plans with, sent only when one changes
 * (never on every machine's progress).
 */
export interface OwnerSummary {
  kind: 'KubeadmControlPlane' | 'MachineDeployment';
  namespace: string;
  name: string;
  version: string;
  /** The current template's revision and hash (a rollout undo changes them without the cluster's manifest). */
  revision: number;
  templateHash: string;
  /** When the current revision was made by a restart (`capt rollout restart`, or rollout.after passing). */
  restartedAt?: string;
  replicas: number;
  /** The control plane: its first machine has initialised the cluster. */
  initialized: boolean;
  /** Every replica Running, and no machine beyond them. */
  ready: boolean;
  /** The owner's Available condition: the control plane answers, or enough workers are available. */
  available: boolean;
  failedMachines: number;
  deleted: boolean;
  /** Every machine on the current template and available, none leaving. */
  rolloutComplete: boolean;
  /** The cluster generation of the last spec or scale the owner received from its cluster (as observedGeneration). */
  observedGeneration: number;
  /** Grows with every report: signals may arrive out of order, and the receiver keeps the newest. */
  sequence: number;
  /** A rebuilt owner, once it has adopted the machines its lost workflow left: how many. */
  adoptedMachines?: number;
}

/**
 * An owner rebuilt after its workflow was lost (terminated, failed, timed out): it adopts the machine
 * workflows that name it as their owner instead of creating them again.
 */
export interface OwnerAdoption {
  /** Why it was rebuilt, e.g. `workflow md/default/web Terminated; found by capt delete cluster`. */
  cause: string;
  at: string;
  /** Machines adopted so far. */
  adopted: number;
  /** Every machine of the cluster looked at: adoption is over. */
  complete: boolean;
}

/** What an owner's status query answers, and what `capt get`, `describe` and `rollout status` show. */
export interface OwnerStatus extends OwnerSummary {
  /** The cluster the owner belongs to, whose status says whether an applied change still waits. */
  cluster: string;
  readyReplicas: number;
  /** Running for minReadySeconds (MachineDeployments; the control plane counts ready ones). */
  availableReplicas: number;
  /** Running machines of the current template. */
  updatedReplicas: number;
  /** The rollout is paused: scaling applies, machines are not replaced. */
  paused: boolean;
  /** MachineDeployments: their MachineSets, newest last, with how many machines each holds. */
  machineSets?: { name: string; hash: string; revision: number; version: string; machines: number; ready: number }[];
  step: string;
  stepReason: OwnerStepReason;
  conditions: Condition[];
  /** The compact records (or a page of them); a machine's detail is its own workflow's status query. */
  machines: MachineRecord[];
  /** Present when `machines` is a page (owner-status-page.ts): how many records the owner holds in all. */
  machinesTotal?: number;
  /** Present when a page is not the last: the `after` of the next one. */
  machinesNext?: string;
  /** The MachineHealthCheck selecting this owner's machines: what it sees, whether it may remediate, what it did. */
  healthCheck?: HealthCheckStatus;
  /** Control plane only: the last passed preflights (etcd members, machines, apiserver versions). */
  preflights?: { at: string; members: string[]; machines: string[]; apiserverVersions: Record<string, string> }[];
  /** Control plane with certificatesExpiryDays: when each machine's apiserver certificate expires. */
  certificatesExpireAt?: Record<string, string>;
  /**
   * Held for its cluster's maintenance window: the window, and its times as last asked (asked only while
   * machines wait to be replaced; `step` says how many wait).
   */
  maintenance?: { window: string; open?: boolean; opensAt?: string; closesAt?: string };
  /** Its machine max age (scheduled repave), and when its oldest live machine is due for replacement. */
  repave?: { maxAgeSeconds: number; nextDueAt?: string };
  /** What its provider updates in place (MachineDeployments of clusters whose provider said so). */
  inPlace?: InPlaceCapability;
  /** Rebuilt after its workflow was lost: what it adopted. */
  adoption?: OwnerAdoption;
  /** Signals it had no handler for (sent by newer code, or by mistake): ignored, and kept here so they are seen. */
  unknownSignals?: UnknownSignal[];
}

/** Where a cluster's children live, to reach them by signal. */
export interface ClusterFacts {
  namespace: string;
  name: string;
  provider: string;
  /** host:port of the control-plane endpoint. */
  endpoint: string;
  serviceSubnet: string;
  podSubnet: string;
  serviceDomain: string;
  /** The failure domains control-plane machines spread over, in declared order; absent when none is declared. */
  controlPlaneFailureDomains?: string[];
  /** What the provider changes on running machines in place (its cluster infrastructure said); absent: nothing. */
  inPlace?: InPlaceCapability;
}

/**
 * One revision of a machine template, shared by the control plane and MachineDeployments: numbered as
 * Kubernetes numbers them (max + 1, never decreased).
 */
export interface Revision<T extends { version: string } = { version: string }> {
  revision: number;
  hash: string;
  version: string;
  /** What differs from the revision before it, e.g. `version v1.35.4 -> v1.36.3`. */
  change: string;
  cause: string;
  at: string;
  template: T;
  /** A restart (rolloutAfter) makes a new revision of the same template: its machines are new. */
  restartedAt?: string;
}

export type MachineOwnerKind = OwnerSummary['kind'];

/** An owner of machines by kind and name (its workflow ID follows from them and the namespace). */
export interface OwnerRef {
  kind: MachineOwnerKind;
  name: string;
}
