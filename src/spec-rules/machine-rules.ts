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

/** What may change on a running Machine in place (labels, annotations, timeouts); the rest belongs to its owner's rollout. */
export function machineChangeProblems(spec: MachineSpec, change: MachineSpecChange): SpecProblem[] {
  const subject = { kind: 'Machine', namespace: spec.namespace, name: spec.name };
  const changed = (Object.keys(immutableFields) as (keyof typeof immutableFields)[])
    .filter((field) => change[field] !== undefined && JSON.stringify(change[field]) !== JSON.stringify(spec[field]));
  return [
    ...changed.map((field) => problem(subject, immutableFields[field], `${field} cannot change on an existing Machine`,
      'change the owning MachineDeployment or control plane instead, which replaces machines in a rollout')),
    ...deletionTimeoutProblems(subject, 'spec.deletion', change),
  ];
}
