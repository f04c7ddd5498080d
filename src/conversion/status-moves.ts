import type { Move } from './field-moves';

/**
 * The status moves every kind shares, as Cluster API's v1beta2 made its status: the new conditions and replica
 * counts move up from `status.v1beta2`, and v1beta1's own are kept under `status.deprecated.v1beta1`.
 */

/** v1beta1's conditions are kept as deprecated in v1beta2, and v1beta2's were v1beta1's `status.v1beta2`. */
export const conditions: Move[] = [
  { v1beta1: 'status.conditions', v1beta2: 'status.deprecated.v1beta1.conditions' },
  { v1beta1: 'status.v1beta2.conditions', v1beta2: 'status.conditions' },
];

export const failure: Move[] = [
  { v1beta1: 'status.failureReason', v1beta2: 'status.deprecated.v1beta1.failureReason' },
  { v1beta1: 'status.failureMessage', v1beta2: 'status.deprecated.v1beta1.failureMessage' },
];

/** v1beta1's replica counts (`deprecated`) are kept as deprecated in v1beta2, whose own (a new meaning) were in `status.v1beta2`. */
export const replicaCounts = (deprecated: string[]): Move[] => [
  ...deprecated.map((field) => ({ v1beta1: `status.${field}`, v1beta2: `status.deprecated.v1beta1.${field}` })),
  ...['readyReplicas', 'availableReplicas', 'upToDateReplicas'].map((field) => ({
    v1beta1: `status.v1beta2.${field}`,
    v1beta2: `status.${field}`,
  })),
];
