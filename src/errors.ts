import { ApplicationFailure } from '@temporalio/common';

/**
 * capt's failure types. Each says whether retrying can help: a non-retryable failure stops at once with
 * its message, which names what is wrong and what to do.
 */
export const ErrorType = {
  InvalidSpec: 'InvalidSpec',
  UnsupportedVersion: 'UnsupportedVersion',
  /** A cluster's secrets could not be read from its cluster workflow: retried, never regenerated. */
  ClusterSecretsUnavailable: 'ClusterSecretsUnavailable',
  /** The host cannot confine a machine as the threat model asks (a tool missing): retried until the operator fixes it. */
  HostNotReady: 'HostNotReady',
  /** The provider cannot make that change where the machine runs (its role, a version going down, the machine gone). */
  InPlaceUpdateUnsupported: 'InPlaceUpdateUnsupported',
  /** A workload cluster's apiserver did not answer (or answered 5xx or 429): retried. */
  WorkloadApiUnavailable: 'WorkloadApiUnavailable',
} as const;
export type ErrorType = (typeof ErrorType)[keyof typeof ErrorType];

export const invalidSpec = (message: string, cause?: Error) =>
  ApplicationFailure.create({ message, type: ErrorType.InvalidSpec, nonRetryable: true, cause });
export const unsupportedVersion = (message: string) =>
  ApplicationFailure.create({ message, type: ErrorType.UnsupportedVersion, nonRetryable: true });
export const inPlaceUpdateUnsupported = (message: string) =>
  ApplicationFailure.create({ message, type: ErrorType.InPlaceUpdateUnsupported, nonRetryable: true });
export const clusterSecretsUnavailable = (message: string, cause?: Error) =>
  ApplicationFailure.create({ message, type: ErrorType.ClusterSecretsUnavailable, nonRetryable: false, cause });
export const hostNotReady = (message: string, cause?: Error) =>
  ApplicationFailure.create({ message, type: ErrorType.HostNotReady, nonRetryable: false, cause });
