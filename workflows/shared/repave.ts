import { repaveDueMs } from '../../src/contract/machine-max-age';
import type { MachineRecord, OwnerStatus } from '../../src/contract/owner';

/** When the next of `live` reaches the max age, from `now`; undefined with no max age or none to come. */
export function msUntilRepave(
  live: MachineRecord[],
  maxAgeSeconds: number | undefined,
  now: number,
): number | undefined {
  if (maxAgeSeconds === undefined) return undefined;
  const due = live.map((m) => repaveDueMs(m.createdAt, maxAgeSeconds)).filter((t) => t > now);
  return due.length ? Math.min(...due) - now : undefined;
}

/** An owner's max age and when its oldest live machine is (or was) due, for its status. */
export function repaveField(maxAgeSeconds: number | undefined, live: MachineRecord[]): Pick<OwnerStatus, 'repave'> {
  if (maxAgeSeconds === undefined) return {};
  const due = live.map((m) => repaveDueMs(m.createdAt, maxAgeSeconds));
  return {
    repave: { maxAgeSeconds, ...(due.length ? { nextDueAt: new Date(Math.min(...due)).toISOString() } : {}) },
  };
}
