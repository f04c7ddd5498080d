import {
  NamespaceNotFoundError,
  ServiceError,
  WorkflowNotFoundError,
  type QueryDefinition,
  type WorkflowHandle,
} from '@temporalio/client';

const attempts = 8;

/**
 * A call to the Temporal service, tried again for about half a minute while the service fails it: a
 * query that arrives while the workflow continues as new is cleared with "buffered query cleared, please
 * retry", and a server under load may fail a describe, or even answer "Namespace not found" when it
 * cannot refresh its namespace cache (seen with 20 clusters booting on this 2-core machine). A workflow
 * that does not exist fails at once.
 */
export async function withServiceRetry<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      if (!(err instanceof ServiceError || err instanceof NamespaceNotFoundError) || attempt >= attempts) throw err;
      await new Promise((resolve) => setTimeout(resolve, Math.min(4000, 500 * attempt)));
    }
  }
}

/**
 * A workflow query, with withServiceRetry's patience. A query that arrives as its workflow continues as new can
 * also be answered "not found" (seen in a 1000-machine rollout, whose owner continues as new every few hundred
 * machines): when the workflow still runs, that is tried again like a service error.
 */
export function queryWithRetry<T, Args extends unknown[]>(
  handle: WorkflowHandle,
  query: QueryDefinition<T, Args>,
  ...args: Args
): Promise<T> {
  return withServiceRetry(async () => {
    try {
      return await handle.query(query, ...args);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError && (await stillRunning(handle)))
        throw new ServiceError(`workflow ${handle.workflowId} was between runs; query again`, { cause: err });
      throw err;
    }
  });
}

const stillRunning = (handle: WorkflowHandle) =>
  handle.describe().then(
    (d) => d.status.name === 'RUNNING',
    () => false,
  );
