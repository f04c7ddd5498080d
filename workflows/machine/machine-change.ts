import type { MachineSpec, MachineTemplateChange, MachineSpecChange } from '../../src/contract/machine';
import { machineChangeProblems } from '../../src/spec-rules/machine-rules';
import { refuseProblems } from '../shared/spec-refusal';
import { MachinePhase } from '../../src/contract/machine';
import { changedKubeletArgs, kubeletArgsFrom, type InPlaceUpdateRequest } from '../../src/contract/in-place';
import { compareVersions, parseVersion } from '../../src/contract/upgrade-plan';
import type { MachineState } from './machine-model';
import { machinePhase } from './machine-status';

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

/** Whether an in-place request gives the machine's kubelet other arguments than it runs with. */
export const newKubeletArgs = (spec: MachineSpec, request: InPlaceUpdateRequest): boolean =>
  !!request.bootstrapConfig &&
  changedKubeletArgs(spec.bootstrap.config, request.bootstrapConfig, [kubeletArgsFrom(spec.bootstrap.role)]).length > 0;

/**
 * The in-place update's validator: a running machine that is not being deleted takes a version that is not older
 * than its own; the one it is already taking (a retried request) is accepted again.
 */
export function validateInPlaceUpdate(state: MachineState, request: InPlaceUpdateRequest): void {
  const refuse = (why: string) => {
    throw new Error(`machine ${state.spec.name} cannot be updated in place to ${request.version}: ${why}`);
  };
  if (state.deletion) refuse('it is being deleted');
  if (state.inPlaceUpdate && state.inPlaceUpdate.templateHash !== request.templateHash)
    refuse(`it is updating to ${state.inPlaceUpdate.version} (MachineSet ${state.inPlaceUpdate.templateHash})`);
  if (machinePhase(state) !== MachinePhase.Running) refuse(`it is ${machinePhase(state)}, not Running`);
  if (parseVersion(request.version) === undefined) refuse('that is not a version (vX.Y.Z)');
  if (compareVersions(request.version, state.spec.version) < 0)
    refuse(`it runs ${state.spec.version}, and a version goes down only by replacement`);
}
