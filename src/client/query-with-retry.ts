import { isGrpcServiceError, type QueryDefinition, type WorkflowHandle } from '@temporalio/client';

/** gRPC's UNAVAILABLE: the server asks the caller to try again. */
const unavailable = 14;
const attempts = 5;

/**
 * A workflow query, tried again while the server answers UNAVAILABLE: a query that arrives while the
 * workflow continues as new, or while its worker is busy with a large task, is cleared with "please retry".
 */
export async function queryWithRetry<T, Args extends unknown[]>(handle: WorkflowHandle, query: QueryDefinition<T, Args>, ...args: Args): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await handle.query(query, ...args);
    } catch (err) {
      const cause = (err as { cause?: unknown }).cause;
      const retryable = (isGrpcServiceError(err) && err.code === unavailable) || (isGrpcServiceError(cause) && cause.code === unavailable);
      if (!retryable || attempt >= attempts) throw err;
      await new Promise((resolve) => setTimeout(resolve, 250 * attempt));
    }
  }
}
