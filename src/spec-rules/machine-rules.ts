import type { MachineTemplateModel } from '../api/model';
import type { MachineSpec, MachineSpecChange } from '../contract/machine';
import { deletionTimeoutProblems } from './owner-rules';
import { problem, type SpecProblem } from './spec-problem';

/** Fields of a running Machine that only a new Machine can change, with where a manifest sets them. */
const immutableFields = {
  version: 'spec.version',
  bootstrap: 'spec.bootstrap',
  infrastructure: 'spec.infrastructureRef',
  failureDomain: 'spec.failureDomain',
} as const;

/** A standalone Machine re-applied: only what changes in place (labels, annotations, timeouts) may differ. */
export function standaloneMachineChangeProblems(
  namespace: string,
  name: string,
  current: MachineTemplateModel,
  next: MachineTemplateModel,
): SpecProblem[] {
  const subject = { kind: 'Machine', namespace, name };
  return (Object.keys(immutableFields) as (keyof typeof immutableFields)[])
    .filter((field) => JSON.stringify(current[field]) !== JSON.stringify(next[field]))
    .map((field) =>
      problem(
        subject,
        immutableFields[field],
        `${field} cannot change on an existing Machine`,
        'delete the Machine and apply a new one: a Machine of its own has no rollout',
      ),
    );
}

/** A standalone Machine's own rules (its deletion timeouts, as a template's). */
export const standaloneMachineProblems = (
  namespace: string,
  name: string,
  template: MachineTemplateModel,
): SpecProblem[] => deletionTimeoutProblems({ kind: 'Machine', namespace, name }, 'spec.deletion', template);

/** What may change on a running Machine in place (labels, annotations, timeouts); the rest belongs to its owner's rollout. */
export function machineChangeProblems(spec: MachineSpec, change: MachineSpecChange): SpecProblem[] {
  const subject = { kind: 'Machine', namespace: spec.namespace, name: spec.name };
  const changed = (Object.keys(immutableFields) as (keyof typeof immutableFields)[]).filter(
    (field) => change[field] !== undefined && JSON.stringify(change[field]) !== JSON.stringify(spec[field]),
  );
  return [
    ...changed.map((field) =>
      problem(
        subject,
        immutableFields[field],
        `${field} cannot change on an existing Machine`,
        'change the owning MachineDeployment or control plane instead, which replaces machines in a rollout',
      ),
    ),
    ...deletionTimeoutProblems(subject, 'spec.deletion', change),
  ];
}
