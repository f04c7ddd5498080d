import { resolveIntOrPercent } from '../../src/api/int-or-percent';
import {
  recordedMachineCondition,
  type HealthCheckSpec,
  type HealthCheckStatus,
  type Remediation,
  type UnhealthyMachine,
} from '../../src/contract/health-check';
import { MachinePhase, type Condition } from '../../src/contract/machine';
import type { MachineRecord } from '../../src/contract/owner';

/** What a MachineHealthCheck sees among an owner's machines at one instant. */
export interface HealthVerdict {
  expected: number;
  healthy: number;
  /** Unhealthy machines, oldest first. */
  unhealthy: UnhealthyMachine[];
  /** The unhealthy ones that may be remediated (not annotated skip-remediation). */
  remediable: UnhealthyMachine[];
  allowed: boolean;
  message: string;
  /** When (epoch ms) the earliest pending timeout runs out: the owner looks again then. */
  nextAtMs?: number;
}

const seconds = (ms: number) => `${Math.round(ms / 1000)}s`;

type Verdict = { unhealthy?: UnhealthyMachine; pendingUntil?: number; healthy: boolean };
type ConditionCheck = { type: string; status: string; timeoutSeconds: number };

/**
 * The first of `checks` whose condition (`seen` gives its status and since when) has held for its timeout makes the
 * machine unhealthy for `reason`; one still within its timeout makes it pending until then.
 */
function judgeConditions(
  machine: string,
  checks: ConditionCheck[],
  seen: (type: string) => { status: string; since: string } | undefined,
  reason: UnhealthyMachine['reason'],
  nowMs: number,
): Verdict {
  let pendingUntil: number | undefined;
  for (const c of checks) {
    const held = seen(c.type);
    if (held?.status !== c.status) continue;
    const heldMs = nowMs - Date.parse(held.since);
    if (heldMs >= c.timeoutSeconds * 1000) {
      const message = `${c.type}=${c.status} for ${seconds(heldMs)} (timeout ${c.timeoutSeconds}s)`;
      return { unhealthy: { machine, reason, message, since: held.since }, healthy: false };
    }
    pendingUntil = Math.min(pendingUntil ?? Infinity, Date.parse(held.since) + c.timeoutSeconds * 1000);
  }
  return pendingUntil === undefined ? { healthy: true } : { pendingUntil, healthy: false };
}

/** Of two verdicts on one machine, the unhealthy one (the first if both), else pending until the sooner. */
function worse(a: Verdict, b: Verdict): Verdict {
  if (a.unhealthy || b.unhealthy) return a.unhealthy ? a : b;
  const until = Math.min(a.pendingUntil ?? Infinity, b.pendingUntil ?? Infinity);
  return until === Infinity ? { healthy: a.healthy && b.healthy } : { pendingUntil: until, healthy: false };
}

/**
 * One machine: unhealthy (why), pending (until when), or healthy; as Cluster API's MachineHealthCheck decides. Its
 * own conditions are judged first, whether or not it has a Node, and name the reason when both are unhealthy.
 */
function judge(check: HealthCheckSpec, m: MachineRecord, nowMs: number): Verdict {
  const now = new Date(nowMs).toISOString();
  if (m.remediate)
    return {
      unhealthy: {
        machine: m.name,
        reason: 'HasRemediateAnnotation',
        message: 'annotated cluster.x-k8s.io/remediate-machine',
        since: now,
      },
      healthy: false,
    };
  if (m.phase === MachinePhase.Failed)
    return {
      unhealthy: {
        machine: m.name,
        reason: 'MachineHasFailure',
        message: m.blocker ?? 'the machine failed',
        since: m.createdAt,
      },
      healthy: false,
    };
  const own = (type: string) => recordedMachineCondition(m, type);
  const byMachine = judgeConditions(m.name, check.unhealthyMachineConditions ?? [], own, 'UnhealthyMachine', nowMs);
  return worse(byMachine, judgeNode(check, m, nowMs, now));
}

/** One machine by its Node: none within nodeStartupTimeout, deleted, or in an unhealthy condition too long. */
function judgeNode(check: HealthCheckSpec, m: MachineRecord, nowMs: number, now: string): Verdict {
  if (m.phase !== MachinePhase.Running) {
    if (!check.nodeStartupTimeoutSeconds) return { healthy: false };
    const until = Date.parse(m.createdAt) + check.nodeStartupTimeoutSeconds * 1000;
    if (nowMs < until) return { pendingUntil: until, healthy: false };
    return {
      unhealthy: {
        machine: m.name,
        reason: 'NodeStartupTimeout',
        message: `no Node within nodeStartupTimeout ${check.nodeStartupTimeoutSeconds}s`,
        since: m.createdAt,
      },
      healthy: false,
    };
  }
  if (m.node?.gone)
    return {
      unhealthy: { machine: m.name, reason: 'NodeNotFound', message: 'its Node was deleted', since: now },
      healthy: false,
    };
  const seen = (type: string) => m.node?.conditions.find((n) => n.type === type);
  return judgeConditions(m.name, check.unhealthyNodeConditions, seen, 'UnhealthyNode', nowMs);
}

/**
 * The health of the machines `check` selects (those not being deleted). Like Cluster API, a machine still
 * within a timeout counts neither as healthy nor as unhealthy, and the remediation limit compares
 * expected - healthy against maxUnhealthy (or unhealthyRange).
 */
export function evaluateHealth(check: HealthCheckSpec, records: MachineRecord[], nowMs: number): HealthVerdict {
  const targets = records.filter((m) => !m.deleting);
  const unhealthy: UnhealthyMachine[] = [];
  const skipped = new Set(targets.filter((m) => m.skipRemediation).map((m) => m.name));
  let healthy = 0;
  let nextAtMs: number | undefined;
  for (const m of targets) {
    const verdict = judge(check, m, nowMs);
    if (verdict.unhealthy) unhealthy.push(verdict.unhealthy);
    if (verdict.healthy) healthy++;
    if (verdict.pendingUntil !== undefined) nextAtMs = Math.min(nextAtMs ?? Infinity, verdict.pendingUntil);
  }
  unhealthy.sort((a, b) => a.since.localeCompare(b.since) || a.machine.localeCompare(b.machine));
  const expected = targets.length;
  const count = expected - healthy;
  const { allowed, limit } = check.unhealthyRange
    ? {
        allowed: count >= check.unhealthyRange.min && count <= check.unhealthyRange.max,
        limit: `unhealthyRange [${check.unhealthyRange.min}-${check.unhealthyRange.max}]`,
      }
    : {
        allowed: count <= resolveIntOrPercent(check.maxUnhealthy ?? '100%', expected, false),
        limit: `maxUnhealthy ${check.maxUnhealthy ?? '100%'}`,
      };
  const remediable = unhealthy.filter((u) => !skipped.has(u.machine));
  const message = allowed
    ? `${healthy}/${expected} healthy${
        unhealthy.length
          ? `; unhealthy: ${unhealthy
              .map((u) => `${u.machine} (${u.message})`)
              .slice(0, 5)
              .join(', ')}`
          : ''
      }${skipped.size ? `; ${skipped.size} annotated skip-remediation` : ''}`
    : `remediation not allowed: ${count} of ${expected} machines are not healthy, beyond ${limit}; waiting until enough recover`;
  return {
    expected,
    healthy,
    unhealthy,
    remediable,
    allowed,
    message,
    ...(nextAtMs !== undefined ? { nextAtMs } : {}),
  };
}

/**
 * Cluster API's HealthCheckSucceeded, on each machine `check` judges now (not those being deleted): True when
 * healthy; False when unhealthy, with the reason and what was seen; none while a timeout still runs (neither
 * healthy nor unhealthy, as Cluster API counts it). Whether the owner may remediate does not change it: a check
 * that may never remediate (unhealthyLessThanOrEqualTo 0) only reports.
 */
export function healthCheckConditions(
  check: HealthCheckSpec,
  records: MachineRecord[],
  nowMs: number,
): Map<string, Condition> {
  const out = new Map<string, Condition>();
  for (const m of records.filter((r) => !r.deleting)) {
    const verdict = judge(check, m, nowMs);
    if (verdict.unhealthy)
      out.set(m.name, {
        type: 'HealthCheckSucceeded',
        status: 'False',
        reason: verdict.unhealthy.reason,
        message: `${check.name}: ${verdict.unhealthy.message}`,
      });
    else if (verdict.healthy)
      out.set(m.name, { type: 'HealthCheckSucceeded', status: 'True', reason: 'HealthCheckSucceeded' });
  }
  return out;
}

/** How many remediations an owner keeps for describe and its status. */
const remediationsKept = 5;

/** The remediations so far with `done` added at `nowMs`, the newest few. */
export function withRemediations(
  kept: Remediation[] | undefined,
  done: UnhealthyMachine[],
  nowMs: number,
): Remediation[] {
  const at = new Date(nowMs).toISOString();
  return [...(kept ?? []), ...done.map((u) => ({ ...u, at }))].slice(-remediationsKept);
}

/** The health check's part of an owner's status (computed with the rest of it, in its status function). */
export function healthCheckStatus(
  check: HealthCheckSpec,
  records: MachineRecord[],
  remediations: Remediation[] | undefined,
  nowMs: number,
): HealthCheckStatus {
  const v = evaluateHealth(check, records, nowMs);
  return {
    name: check.name,
    nodeStartupTimeoutSeconds: check.nodeStartupTimeoutSeconds,
    expectedMachines: v.expected,
    currentHealthy: v.healthy,
    remediationAllowed: v.allowed,
    message: v.message,
    unhealthy: v.unhealthy.slice(0, 5),
    remediations: remediations ?? [],
  };
}

/** Cluster API's RemediationAllowed condition, for an owner's conditions. */
export const remediationAllowedCondition = (s: HealthCheckStatus): Condition =>
  s.remediationAllowed
    ? { type: 'RemediationAllowed', status: 'True' }
    : { type: 'RemediationAllowed', status: 'False', reason: 'TooManyUnhealthy', message: s.message };
