import { maintenanceWindowTimes } from '../../src/api/maintenance-window';
import type { MaintenanceWindow, WindowTimes } from '../../src/contract/maintenance-window';

/**
 * When an owner's maintenance window opens and closes, from `nowMs`: time zones are read from the host's
 * time-zone data, which a replay on another host must not re-read, so an owner asks a local activity once per
 * window and its answer stays in history.
 */
export async function maintenanceWindowAt(window: MaintenanceWindow, nowMs: number): Promise<WindowTimes> {
  return maintenanceWindowTimes(window, nowMs);
}
