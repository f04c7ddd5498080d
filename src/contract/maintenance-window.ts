/**
 * A cluster's maintenance window, as Gardener gives one (days, hours, a time zone), on the Cluster as
 * `capt.cluster.x-k8s.io/maintenance-window: "Sat,Sun 02:00-04:00 Europe/Berlin"`. A MachineDeployment or control
 * plane annotated `capt.cluster.x-k8s.io/rollout-in-maintenance-window: "true"` replaces machines (rollouts,
 * repaves) only while it is open; scaling applies at any time.
 */
export const maintenanceWindowAnnotation = 'capt.cluster.x-k8s.io/maintenance-window';
export const rolloutInWindowAnnotation = 'capt.cluster.x-k8s.io/rollout-in-maintenance-window';

export interface MaintenanceWindow {
  /** As written, for status and messages. */
  text: string;
  /** Days it opens on, 0 = Sunday; a window past midnight belongs to the day it opens. */
  days: number[];
  /** Seconds after midnight, wall time in `timeZone`. */
  opensAt: number;
  closesAt: number;
  timeZone: string;
}

/** The window now, or the next one: whether it is open, and when it opens and closes (ISO times). */
export interface WindowTimes {
  open: boolean;
  opensAt: string;
  closesAt: string;
}
