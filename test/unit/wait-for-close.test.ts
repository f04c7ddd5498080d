import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ServiceError, WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { waitForClose } from '../../src/client/wait-for-close';

/** "context deadline exceeded", as a loaded server fails a call (the client does not retry it). */
const deadlineExceeded = () => new ServiceError('Failed to get Workflow execution history');

/** A handle whose describes answer from `statuses` in turn (the last one for good), and whose result is `outcome`. */
function handle(statuses: (string | Error)[], outcome: () => Promise<unknown>) {
  let describes = 0;
  const h = {
    workflowId: 'cluster/default/fleet-0',
    describe: async () => {
      const s = statuses[Math.min(describes++, statuses.length - 1)]!;
      if (s instanceof Error) throw s;
      return { status: { name: s } };
    },
    result: outcome,
  };
  return { h: h as unknown as WorkflowHandle, describes: () => describes };
}

test('a service error while the workflow runs is asked again, and its close is seen', async () => {
  let ticks = 0;
  const { h, describes } = handle([deadlineExceeded(), 'RUNNING', 'COMPLETED'], async () => undefined);
  const closed = await waitForClose(h, Date.now() + 60_000, async () => {
    ticks++;
  });
  assert.equal(closed, true);
  assert.equal(describes(), 3);
  assert.equal(ticks, 1, 'one progress look while it ran');
});

test("a service error reading a closed run's outcome is asked again", async () => {
  let reads = 0;
  const { h } = handle(['COMPLETED'], async () => {
    if (reads++ === 0) throw deadlineExceeded();
  });
  assert.equal(await waitForClose(h, Date.now() + 60_000, async () => undefined), true);
  assert.equal(reads, 2);
});

test('a run that failed throws as result() does; a deadline that passes first gives false', async () => {
  const failed = new WorkflowFailedError('Workflow execution failed', undefined, 'NON_RETRYABLE_FAILURE');
  await assert.rejects(
    waitForClose(handle(['FAILED'], () => Promise.reject(failed)).h, Date.now() + 60_000, async () => undefined),
    WorkflowFailedError,
  );
  const { h } = handle(['RUNNING'], async () => undefined);
  assert.equal(await waitForClose(h, Date.now() + 1500, async () => undefined), false);
});
