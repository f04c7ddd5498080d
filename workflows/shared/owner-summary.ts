import type { OwnerStatus, OwnerSummary } from '../../src/contract/owner';

/** The fields of an owner's status its cluster plans with. */
export function ownerSummary(status: OwnerStatus): OwnerSummary {
  const {
    kind,
    namespace,
    name,
    version,
    revision,
    templateHash,
    replicas,
    initialized,
    ready,
    available,
    failedMachines,
    deleted,
    rolloutComplete,
    observedGeneration,
    sequence,
  } = status;
  const adopted = status.adoption?.complete ? { adoptedMachines: status.adoption.adopted } : {};
  return {
    kind,
    namespace,
    name,
    version,
    revision,
    templateHash,
    replicas,
    initialized,
    ready,
    available,
    failedMachines,
    deleted,
    rolloutComplete,
    observedGeneration,
    sequence,
    ...adopted,
  };
}

/** Two statuses with the same key need no new summary to the cluster. */
export const summaryKey = (status: OwnerStatus) => JSON.stringify({ ...ownerSummary(status), sequence: 0 });
