import { ServiceError, type QueryDefinition, type WorkflowHandle } from '@temporalio/client';

const attempts = 8;

/**
 * A workflow query, tried again for about half a minute while the service fails it (a query that arrives
 * while the workflow continues as new, or while its worker is busy with a large task, is cleared with
 * "buffered query cleared, please retry"). A workflow that does not exist fails at once.
 */
export async function queryWithRetry<T, Args extends unknown[]>(handle: WorkflowHandle, query: QueryDefinition<T, Args>, ...args: Args): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await handle.query(query, ...args);
    } catch (err) {
      if (!(err instanceof ServiceError) || attempt >= attempts) throw err;
      await new Promise((resolve) => setTimeout(resolve, Math.min(4000, 500 * attempt)));
    }
  }
}
