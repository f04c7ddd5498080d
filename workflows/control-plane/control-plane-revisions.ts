import type { ControlPlaneModel } from '../../src/api/model';
import type { Revision } from '../../src/contract/owner';
import { specHash } from '../shared/spec-hash';

/** One revision of the control plane's machine template, for rollout history and undo. */
export type ControlPlaneRevision = Revision<Pick<ControlPlaneModel, 'version' | 'kubeadmConfigSpec' | 'infrastructure'>>;

/** How many earlier revisions the control plane keeps besides the current one. */
export const controlPlaneRevisionHistoryLimit = 10;

/** The fields whose change replaces machines. */
export function templateOf(spec: ControlPlaneModel): ControlPlaneRevision['template'] {
  return { version: spec.version, kubeadmConfigSpec: spec.kubeadmConfigSpec, infrastructure: spec.infrastructure };
}

export const templateHash = (spec: ControlPlaneModel) => specHash(templateOf(spec));
