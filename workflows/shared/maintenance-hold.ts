import { proxyLocalActivities } from '@temporalio/workflow';
import type * as coreActivities from '../../activities';
import type { MaintenanceWindow, WindowTimes } from '../../src/contract/maintenance-window';
import type { OwnerStatus } from '../../src/contract/owner';

/** The window's current or next opening as an owner last asked it, kept in its state. */
export interface AskedWindow {
  text: string;
  times: WindowTimes;
}

/** Machines waiting for a closed window: how many, for which window, until when. */
export interface WindowWait {
  text: string;
  opensAt: string;
  waiting: number;
}

/** The window's times: a local activity, since time zones are the host's data (see maintenanceWindowAt). */
const { maintenanceWindowAt } = proxyLocalActivities<typeof coreActivities>({
  startToCloseTimeout: '10s',
  retry: { initialInterval: '1s', maximumInterval: '10s' },
});

/**
 * Whether `waiting` machines to replace must wait: the owner is held for its cluster's `window` and the window is
 * closed. Its times are asked only when the last answer has passed (about twice a window), and kept in
 * `holder.window` for the status and the wake-up timer; with nothing to replace they are forgotten, so no timer
 * wakes the owner for a window it does not need.
 */
export async function windowClosed(
  holder: { window?: AskedWindow },
  window: MaintenanceWindow | undefined,
  waiting: number,
  now: number,
): Promise<WindowWait | undefined> {
  if (!window || !waiting) {
    holder.window = undefined;
    return undefined;
  }
  const known = askedTimes(window, holder);
  if (!known || now >= Date.parse(known.open ? known.closesAt : known.opensAt))
    holder.window = { text: window.text, times: await maintenanceWindowAt(window, now) };
  const times = holder.window!.times;
  return times.open ? undefined : { text: window.text, opensAt: times.opensAt, waiting };
}

/** Until the asked window opens (machines wait for it) or closes (replacing stops); undefined when none was asked. */
export function msUntilWindowChanges(holder: { window?: AskedWindow }, now: number): number | undefined {
  const times = holder.window?.times;
  if (!times) return undefined;
  const at = Date.parse(times.open ? times.closesAt : times.opensAt);
  return at > now ? at - now : undefined;
}

export const windowWaitStep = (w: WindowWait) =>
  `${w.waiting} machine(s) to replace wait for the maintenance window (${w.text}), which opens at ${w.opensAt}`;

/** The window an owner is held for, with the times it last asked when they are still that window's. */
export function maintenanceField(
  window: MaintenanceWindow | undefined,
  holder: { window?: AskedWindow },
): Pick<OwnerStatus, 'maintenance'> {
  return window ? { maintenance: { window: window.text, ...askedTimes(window, holder) } } : {};
}

/** The times the holder last asked, when they are `window`'s (a changed window is asked again). */
const askedTimes = (window: MaintenanceWindow, holder: { window?: AskedWindow }) =>
  holder.window?.text === window.text ? holder.window.times : undefined;
