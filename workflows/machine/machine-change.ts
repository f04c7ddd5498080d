import { invalidSpec } from '../../src/errors';
import type { MachineSpec, MachineSpecChange, MachineTemplateChange } from '../../src/contract/machine';

/**
 * The machine workflow's update validator: what may change in place, and a clear refusal for the rest.
 * Throwing here rejects the update before anything reaches history.
 */
export function validateMachineChange(spec: MachineSpec, change: MachineSpecChange): void {
  const immutable = (['version', 'bootstrap', 'infrastructure', 'failureDomain'] as const).filter(
    (field) => change[field] !== undefined && JSON.stringify(change[field]) !== JSON.stringify(spec[field]),
  );
  if (immutable.length) {
    throw invalidSpec(
      `Machine ${spec.namespace}/${spec.name}: ${immutable.join(', ')} cannot change on an existing Machine; ` +
        'change the owning MachineDeployment or control plane instead, which replaces machines in a rollout',
    );
  }
  for (const field of ['nodeDrainTimeoutSeconds', 'nodeVolumeDetachTimeoutSeconds', 'nodeDeletionTimeoutSeconds'] as const) {
    const value = change[field];
    if (value !== undefined && (!Number.isFinite(value) || value < 0)) {
      throw invalidSpec(`Machine ${spec.namespace}/${spec.name}: ${field} must be a number of seconds >= 0 (0 means no limit), got ${value}`);
    }
  }
}

/**
 * The owner's template changed in place: keys the old template set are replaced by the new template's,
 * and whatever else the machine carries (an operator's annotation) stays.
 */
export function mergeTemplateChange(spec: MachineSpec, { previous, next }: MachineTemplateChange): MachineSpecChange {
  const merge = (now: Record<string, string>, old: Record<string, string>, fresh: Record<string, string>) =>
    ({ ...Object.fromEntries(Object.entries(now).filter(([k]) => !(k in old))), ...fresh });
  return {
    labels: merge(spec.labels, previous.labels, next.labels),
    annotations: merge(spec.annotations, previous.annotations, next.annotations),
    nodeDrainTimeoutSeconds: next.nodeDrainTimeoutSeconds,
    nodeVolumeDetachTimeoutSeconds: next.nodeVolumeDetachTimeoutSeconds,
    nodeDeletionTimeoutSeconds: next.nodeDeletionTimeoutSeconds,
  };
}
