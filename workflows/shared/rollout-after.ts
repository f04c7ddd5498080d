import type { MachineRecord } from '../../src/contract/owner';

/**
 * `rolloutAfter`, as Cluster API reads it: once the time has passed, machines created before it are
 * replaced, once (the revision made for it records the time as its restartedAt).
 */
export function rolloutAfterDue(
  rolloutAfter: string | undefined,
  lastRestart: string | undefined,
  machines: MachineRecord[],
  nowMs: number,
): boolean {
  if (!rolloutAfter || Date.parse(rolloutAfter) > nowMs || (lastRestart ?? '') >= rolloutAfter) return false;
  return machines.some((m) => !m.deleting && Date.parse(m.createdAt) < Date.parse(rolloutAfter));
}

/** Milliseconds until a future rolloutAfter, for a workflow timer; undefined when none is ahead. */
export function msUntilRolloutAfter(rolloutAfter: string | undefined, nowMs: number): number | undefined {
  return rolloutAfter && Date.parse(rolloutAfter) > nowMs ? Date.parse(rolloutAfter) - nowMs + 50 : undefined;
}

/** The restart time the current revision carries once a spec with `rolloutAfter` is looked at: a due rolloutAfter makes a new one. */
export const restartedAtAfter = (
  rolloutAfter: string | undefined,
  lastRestart: string | undefined,
  machines: MachineRecord[],
  nowMs: number,
) => (rolloutAfterDue(rolloutAfter, lastRestart, machines, nowMs) ? rolloutAfter : lastRestart);
