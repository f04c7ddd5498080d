import type { RemediationStrategy, UnhealthyMachine } from '../../src/contract/health-check';
import { MachinePhase } from '../../src/contract/machine';
import type { MachineRecord } from '../../src/contract/owner';
import { isRunning } from '../shared/machine-pool';
import type { HealthVerdict } from '../shared/machine-health';

/** Cluster API's defaults for what remediationStrategy leaves out. */
const defaults = { retryPeriodSeconds: 0, minHealthyPeriodSeconds: 3600 };
export const remediationStrategy = (spec: {
  remediation?: RemediationStrategy;
}): Required<Omit<RemediationStrategy, 'maxRetry'>> & RemediationStrategy => ({ ...defaults, ...spec.remediation });

/** The control plane's last remediation, kept in its state: the row of retries it may start. */
export interface LastRemediation {
  machine: string;
  at: string;
  retries: number;
  /** The machine created to replace it, once there is one. */
  replacement?: string;
}

export type RemediationDecision =
  { remediate: UnhealthyMachine; retries: number } | { blocked: string } | { waitUntilMs: number; why: string };

/** Why a decision leaves an unhealthy machine alone for now (blocked, or held back by retryPeriod), for status. */
export const remediationHeld = (d: RemediationDecision | undefined): string | undefined =>
  d && ('blocked' in d ? d.blocked : 'why' in d ? d.why : undefined);

const quorum = (members: number) => Math.floor(members / 2) + 1;

/**
 * Whether the control plane remediates now, and which machine, as Cluster API's KubeadmControlPlane decides:
 * one machine at a time (none while a machine is leaving or starting), never the last one, never when the
 * members left would lack a healthy quorum, and within remediationStrategy. Undefined: nothing to do now.
 */
export function controlPlaneRemediation(
  verdict: HealthVerdict,
  machines: MachineRecord[],
  strategy: ReturnType<typeof remediationStrategy>,
  last: LastRemediation | undefined,
  nowMs: number,
): RemediationDecision | undefined {
  if (!verdict.allowed || !verdict.remediable.length) return undefined;
  const live = machines.filter((m) => !m.deleting);
  if (
    machines.some((m) => m.deleting) ||
    live.some((m) => m.phase !== MachinePhase.Running && m.phase !== MachinePhase.Failed)
  )
    return undefined;
  const victim = verdict.remediable[0]!;
  if (live.length <= 1)
    return {
      blocked: `${victim.machine} is unhealthy (${victim.message}) but is the only control-plane machine: removing it would leave etcd with no member; scale the control plane up, or repair the machine`,
    };
  const healthyOthers = live.filter((m) => m.name !== victim.machine && isRunning(m)).length;
  if (healthyOthers < quorum(live.length - 1)) {
    return {
      blocked: `${victim.machine} is unhealthy (${victim.message}) but removing it would leave ${healthyOthers} healthy of ${live.length - 1} etcd members, below quorum; repair the other machines first`,
    };
  }
  const record = live.find((m) => m.name === victim.machine);
  const inRow =
    !!last &&
    last.replacement === victim.machine &&
    !!record &&
    Date.parse(record.createdAt) + strategy.minHealthyPeriodSeconds * 1000 > nowMs;
  if (!inRow) return { remediate: victim, retries: 0 };
  const retries = last.retries + 1;
  const row = `${victim.machine} is unhealthy (${victim.message}) and replaces ${last.machine}, remediated at ${last.at}: remediating it would be retry ${retries}`;
  if (strategy.maxRetry !== undefined && retries > strategy.maxRetry)
    return {
      blocked: `${row}, beyond maxRetry ${strategy.maxRetry}; it stays for an operator to repair or delete`,
    };
  const earliest = Date.parse(last.at) + strategy.retryPeriodSeconds * 1000;
  if (nowMs < earliest)
    return {
      waitUntilMs: earliest,
      why: `${row}, held back by retryPeriod ${strategy.retryPeriodSeconds}s until ${new Date(earliest).toISOString()}`,
    };
  return { remediate: victim, retries };
}
