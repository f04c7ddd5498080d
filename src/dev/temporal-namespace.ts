import { Connection, isGrpcServiceError } from '@temporalio/client';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';
import { msToTs } from '@temporalio/common/lib/time';
import { setTimeout as sleep } from 'node:timers/promises';
import { captSearchAttributes } from '../contract/search-attributes';

/** gRPC status codes. */
const grpcStatus = {
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  UNAVAILABLE: 14,
} as const;
/** A server still starting, or a namespace its caches (refreshed every 2 s) do not show yet. */
const starting: number[] = [grpcStatus.DEADLINE_EXCEEDED, grpcStatus.NOT_FOUND, grpcStatus.UNAVAILABLE];
const retention = msToTs('1 day');

/** `call` again every half second while it fails with one of `retryOn` (or cannot connect) and time is left. */
async function retrying<T>(what: string, deadline: number, call: () => Promise<T>, retryOn = starting): Promise<T> {
  for (;;) {
    try {
      return await call();
    } catch (err) {
      const transient = isGrpcServiceError(err) ? retryOn.includes(err.code) : /connect/i.test((err as Error).message);
      if (!transient || Date.now() > deadline)
        throw new Error(`${what} failed: ${(err as Error).message}`, { cause: err });
      await sleep(500);
    }
  }
}

/**
 * What a real Temporal server lacks and the dev server gets by flags: the `default` namespace and capt's
 * search attributes (Keyword; PostgreSQL visibility maps them onto its ten Keyword columns). Idempotent.
 * Returns once the frontend answers a visibility query on them, so the first workflow start finds them.
 */
export async function registerCaptNamespace(
  address: string,
  namespace = 'default',
  timeoutMs = 120_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const connection = await retrying(`connecting to the Temporal server at ${address}`, deadline, () =>
    Connection.connect({ address, connectTimeout: '2s' }),
  );
  try {
    await retrying(`registering namespace ${namespace}`, deadline, () =>
      connection.workflowService
        .registerNamespace({ namespace, workflowExecutionRetentionPeriod: retention })
        .catch((err: unknown) => {
          if (!(isGrpcServiceError(err) && err.code === grpcStatus.ALREADY_EXISTS)) throw err;
        }),
    );
    const existing = await retrying('listing search attributes', deadline, () =>
      connection.operatorService.listSearchAttributes({ namespace }),
    );
    const missing = captSearchAttributes.filter((key) => !(key.name in (existing.customAttributes ?? {})));
    if (missing.length > 0) {
      await retrying("adding capt's search attributes", deadline, () =>
        connection.operatorService.addSearchAttributes({
          namespace,
          searchAttributes: Object.fromEntries(
            missing.map((key) => [key.name, encodeSearchAttributeIndexedValueType(key.type)!]),
          ),
        }),
      );
    }
    // The frontend refuses the query (INVALID_ARGUMENT) until its namespace cache has the new attributes.
    const query = captSearchAttributes.map((key) => `${key.name} = 'none'`).join(' AND ');
    await retrying(
      "a visibility query on capt's search attributes",
      deadline,
      () => connection.workflowService.countWorkflowExecutions({ namespace, query }),
      [...starting, grpcStatus.INVALID_ARGUMENT],
    );
  } finally {
    await connection.close();
  }
}
