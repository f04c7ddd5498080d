import type { MachineTemplateModel } from '../../src/api/model';
import type { Revision } from '../../src/contract/owner';
import { revisionHash, specHash } from '../shared/spec-hash';

/**
 * A MachineSet, as plain workflow state: one per template revision, named `<md>-<hash>`. The sets are
 * the MachineDeployment's rollout history too, as ReplicaSets are a Deployment's.
 */
export interface MachineSet extends Revision<MachineTemplateModel> {
  name: string;
}

/** The fields whose change forces a rollout; labels, annotations and timeouts change in place. */
export const rolloutFields = (t: MachineTemplateModel) => ({
  version: t.version,
  bootstrap: t.bootstrap,
  infrastructure: t.infrastructure,
  failureDomain: t.failureDomain,
});

/** The template's hash as clients compare it with a manifest. */
export const machineTemplateHash = (t: MachineTemplateModel) => specHash(rolloutFields(t));

export const machineSetHash = (t: MachineTemplateModel, restartedAt?: string) =>
  revisionHash(rolloutFields(t), restartedAt);

export const machineSetName = (deployment: string, hash: string) => `${deployment}-${hash}`;
