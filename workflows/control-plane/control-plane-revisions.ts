import type { ControlPlaneModel } from '../../src/api/model';
import { specHash } from '../shared/spec-hash';

/** One revision of the control plane's machine template, for rollout history and undo. */
export interface ControlPlaneRevision {
  revision: number;
  hash: string;
  version: string;
  cause: string;
  at: string;
  template: Pick<ControlPlaneModel, 'version' | 'kubeadmConfigSpec' | 'infrastructure'>;
}

export const revisionHistoryLimit = 10;

/** The fields whose change replaces machines. */
export function templateOf(spec: ControlPlaneModel): ControlPlaneRevision['template'] {
  return { version: spec.version, kubeadmConfigSpec: spec.kubeadmConfigSpec, infrastructure: spec.infrastructure };
}

export const templateHash = (spec: ControlPlaneModel) => specHash(templateOf(spec));

/** Records the spec's template as the newest revision unless it already is; the number only grows. */
export function recordRevision(revisions: ControlPlaneRevision[], spec: ControlPlaneModel, cause: string, at: string): ControlPlaneRevision[] {
  const hash = templateHash(spec);
  if (revisions.at(-1)?.hash === hash) return revisions;
  const revision = Math.max(0, ...revisions.map((r) => r.revision)) + 1;
  // As kubectl's undo: an earlier template that comes back moves to the new number.
  const kept = revisions.filter((r) => r.hash !== hash);
  return [...kept, { revision, hash, version: spec.version, cause, at, template: templateOf(spec) }].slice(-revisionHistoryLimit);
}
