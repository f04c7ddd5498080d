import type { MachineOwnerKind } from './owner';

/** A lost owner workflow (terminated, failed, timed out) the cluster rebuilt, and what the rebuilt one adopted. */
export interface OwnerRecovery {
  kind: MachineOwnerKind;
  name: string;
  /** What Temporal said of the lost workflow, and what found it out (an apply, the deletion, `capt repair`). */
  cause: string;
  at: string;
  /** Machines adopted, once the rebuilt owner has looked at them all. */
  adopted?: number;
}

/** One owner as `capt repair cluster` found it. */
export interface OwnerCheck {
  kind: MachineOwnerKind;
  name: string;
  workflowId: string;
  /** Temporal's state of its workflow: RUNNING, TERMINATED, FAILED, TIMED_OUT, ... */
  state: string;
  /** The machine workflows that name it as their owner. */
  machines: number;
  action: 'none' | 'rebuilt' | 'would rebuild';
}

/** What `capt repair cluster` found and did. */
export interface RepairReport {
  namespace: string;
  cluster: string;
  dryRun: boolean;
  owners: OwnerCheck[];
  /** The cluster's standalone machines (it owns them itself). */
  standaloneMachines: number;
  /** Machines the infrastructure provider holds for the cluster; more than the machine workflows means some lost theirs. */
  providerMachines: number;
}
