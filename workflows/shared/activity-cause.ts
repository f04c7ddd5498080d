import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';

/** Rethrows an activity's own failure (what the client should read), not its "Activity task failed" wrapper. */
export function rethrowActivityCause(err: unknown): never {
  throw err instanceof ActivityFailure && err.cause instanceof ApplicationFailure ? err.cause : err;
}
