import { MachinePhase, nodeReadyStatus, type Condition, type NodeConditionState } from './machine';
import type { MachineRecord } from './owner';

/**
 * A MachineHealthCheck as capt carries it to the owner whose machines it selects (v1beta1 and v1beta2 field
 * names read into one shape by the manifest loader).
 */
export interface HealthCheckSpec {
  name: string;
  /** A Node condition in this state for `timeoutSeconds` makes its machine unhealthy. */
  unhealthyNodeConditions: { type: string; status: NodeConditionState['status']; timeoutSeconds: number }[];
  /**
   * One of the machine's own conditions in this state for `timeoutSeconds` makes it unhealthy (Cluster API v1.12+).
   * Absent rather than empty, so a check written before it carries the same spec as then.
   */
  unhealthyMachineConditions?: { type: string; status: NodeConditionState['status']; timeoutSeconds: number }[];
  /** A machine with no Node this long after its creation is unhealthy; 0 turns the check off. */
  nodeStartupTimeoutSeconds: number;
  /** Above this many unhealthy machines (a count or a percentage of those selected), nothing is remediated. */
  maxUnhealthy?: number | string;
  /** v1beta1's alternative to maxUnhealthy: remediate only while the unhealthy count is within [min, max]. */
  unhealthyRange?: { min: number; max: number };
}

type RecordedCondition = { status: Condition['status']; since: string };

/**
 * The machine conditions a check may name, each as the owner that judges a machine finds it in its record: the
 * machine's phase, creation time and its Node's unhealthy conditions give NodeReady (Unknown since its creation
 * until it has a Node, then its Node's Ready) and when it last changed. Of capt's other machine conditions the record
 * holds no transitions, so a check on one would be judged wrong, and is refused. A deleted Node's machine is left to
 * the Node's judge, which finds it unhealthy at once.
 */
const recordedMachineConditions: Record<string, (m: MachineRecord) => RecordedCondition | undefined> = {
  NodeReady: (m) => {
    if (m.node?.gone) return undefined;
    const running = m.phase === MachinePhase.Running;
    const ready = m.node?.conditions.find((c) => c.type === 'Ready');
    const status = nodeReadyStatus(running, { ready: ready?.status ?? 'True' });
    return { status, since: (running && ready?.since) || m.createdAt };
  },
};
export const checkedMachineConditions: readonly string[] = Object.keys(recordedMachineConditions);
/** A machine's own condition of `type` as its owner's record gives it, if a check may name that type. */
export const recordedMachineCondition = (m: MachineRecord, type: string) =>
  Object.hasOwn(recordedMachineConditions, type) ? recordedMachineConditions[type]!(m) : undefined;

/** Cluster API's nodeStartupTimeout when a MachineHealthCheck gives none: 10 minutes. */
export const defaultNodeStartupTimeoutSeconds = 600;

/** KubeadmControlPlane's remediationStrategy (v1beta2 `remediation`), in seconds. */
export interface RemediationStrategy {
  /** How often a machine's replacements may be remediated in a row; unlimited when absent. */
  maxRetry?: number;
  /** The least time between two remediations in such a row (default 0). */
  retryPeriodSeconds?: number;
  /** A replacement healthy this long ends the row: its next remediation counts from zero (default 1h). */
  minHealthyPeriodSeconds?: number;
}

/** Why a machine is unhealthy, Cluster API's reasons. */
export type UnhealthyReason =
  | 'UnhealthyMachine'
  | 'UnhealthyNode'
  | 'NodeStartupTimeout'
  | 'NodeNotFound'
  | 'HasRemediateAnnotation'
  | 'MachineHasFailure';

export interface UnhealthyMachine {
  machine: string;
  reason: UnhealthyReason;
  /** What was seen, for people: "Ready=Unknown for 45s (timeout 40s)" (a Node's), "NodeReady=False for ..." (the machine's). */
  message: string;
  /** Since when the condition held (or the machine was created, for a Node that never came). */
  since: string;
}

/** One remediation the owner carried out, as history, describe and the UI show it. */
export interface Remediation extends UnhealthyMachine {
  at: string;
}

/** The health check's status, in the owner's status: what it sees and whether it may remediate. */
export interface HealthCheckStatus {
  name: string;
  /** The check's nodeStartupTimeout (0: off), which `capt health` also judges machines without a Node by. */
  nodeStartupTimeoutSeconds: number;
  expectedMachines: number;
  currentHealthy: number;
  remediationAllowed: boolean;
  /** Why remediation is not allowed, or what was last done. */
  message: string;
  /** The unhealthy machines now (a few named; the count is expectedMachines - currentHealthy). */
  unhealthy: UnhealthyMachine[];
  /** The newest remediations, newest last. */
  remediations: Remediation[];
}
