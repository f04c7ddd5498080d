import { repaveDueMs } from '../../src/contract/machine-max-age';
import type { ControlPlaneModel } from '../../src/api/model';
import type { MachineRecord, Revision } from '../../src/contract/owner';
import { revisionHash, specHash } from '../shared/spec-hash';
import { expiringMachines } from './certificate-rotation';

/** One revision of the control plane's machine template, for rollout history and undo. */
export type ControlPlaneRevision = Revision<
  Pick<ControlPlaneModel, 'version' | 'kubeadmConfigSpec' | 'infrastructure'>
>;

/** How many earlier revisions the control plane keeps besides the current one. */
export const controlPlaneRevisionHistoryLimit = 10;

/** The fields whose change replaces machines. */
export function templateOf(spec: ControlPlaneModel): ControlPlaneRevision['template'] {
  return { version: spec.version, kubeadmConfigSpec: spec.kubeadmConfigSpec, infrastructure: spec.infrastructure };
}

export const templateHash = (spec: ControlPlaneModel) => specHash(templateOf(spec));

/** The hash machines are compared by: the template's, and the current revision's restart time when there was one. */
export const controlPlaneMachineHash = (spec: ControlPlaneModel, restartedAt: string | undefined) =>
  revisionHash(templateOf(spec), restartedAt);

/**
 * What only a new machine renews, whatever its template: an apiserver certificate expiring within
 * certificatesExpiryDays (Cluster API's rolloutBefore), or an age past the machine max age.
 */
export function dueForRenewal(
  certificateExpiry: Record<string, string>,
  certificatesExpiryDays: number | undefined,
  nowMs: number,
  maxAgeSeconds?: number,
): (m: MachineRecord) => boolean {
  const expiring = expiringMachines(certificateExpiry, certificatesExpiryDays, nowMs);
  return (m) =>
    expiring.includes(m.name) || (maxAgeSeconds !== undefined && repaveDueMs(m.createdAt, maxAgeSeconds) <= nowMs);
}

/** The machines a control-plane rollout replaces: another template than `hash`, or one due for renewal. */
export function outdatedControlPlaneMachine(
  hash: string,
  certificateExpiry: Record<string, string>,
  certificatesExpiryDays: number | undefined,
  nowMs: number,
  maxAgeSeconds?: number,
): (m: MachineRecord) => boolean {
  const due = dueForRenewal(certificateExpiry, certificatesExpiryDays, nowMs, maxAgeSeconds);
  return (m) => m.templateHash !== hash || due(m);
}
