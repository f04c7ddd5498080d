import type { MachineSpec, MachineTemplateChange, MachineSpecChange } from '../../src/contract/machine';
import { machineChangeProblems } from '../../src/spec-rules/machine-rules';
import { refuseProblems } from '../shared/spec-refusal';

/**
 * The machine workflow's update validator: what may change in place, and a clear refusal for the rest.
 * Throwing here rejects the update before anything reaches history.
 */
export function validateMachineChange(spec: MachineSpec, change: MachineSpecChange): void {
  refuseProblems(machineChangeProblems(spec, change));
}

/**
 * The owner's template changed in place: keys the old template set are replaced by the new template's,
 * and whatever else the machine carries (an operator's annotation) stays.
 */
export function mergeTemplateChange(spec: MachineSpec, { previous, next }: MachineTemplateChange): MachineSpecChange {
  const merge = (now: Record<string, string>, old: Record<string, string>, fresh: Record<string, string>) => ({
    ...Object.fromEntries(Object.entries(now).filter(([k]) => !(k in old))),
    ...fresh,
  });
  return {
    labels: merge(spec.labels, previous.labels, next.labels),
    annotations: merge(spec.annotations, previous.annotations, next.annotations),
    nodeDrainTimeoutSeconds: next.nodeDrainTimeoutSeconds,
    nodeVolumeDetachTimeoutSeconds: next.nodeVolumeDetachTimeoutSeconds,
    nodeDeletionTimeoutSeconds: next.nodeDeletionTimeoutSeconds,
    // The template's taints are the machine's: a taint it dropped leaves the Node (Always), as Cluster API's.
    taints: next.taints ?? (spec.taints ? [] : undefined),
  };
}
