import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WorkflowNotFoundError, type WorkflowHandle } from '@temporalio/client';
import { defineQuery } from '@temporalio/workflow';
import { queryWithRetry } from '../../src/client/query-with-retry';

const statusQuery = defineQuery<string>('status');
const notFound = () => new WorkflowNotFoundError('Failed to query Workflow', 'md/default/web', undefined);

/** A handle whose queries answer from `answers` in turn, and whose describe says `status` (a pure stand-in). */
function handle(answers: (() => string)[], status: string | Error) {
  let queries = 0;
  const h = {
    workflowId: 'md/default/web',
    query: async () => answers[queries++]!(),
    describe: async () => {
      if (status instanceof Error) throw status;
      return { status: { name: status } };
    },
  };
  return { h: h as unknown as WorkflowHandle, queries: () => queries };
}

test('a query answered "not found" while its workflow still runs (between runs) is asked again', async () => {
  const { h, queries } = handle(
    [
      () => {
        throw notFound();
      },
      () => 'answered',
    ],
    'RUNNING',
  );
  assert.equal(await queryWithRetry(h, statusQuery), 'answered');
  assert.equal(queries(), 2);
});

test('a workflow that does not exist fails at once', async () => {
  const { h, queries } = handle(
    [
      () => {
        throw notFound();
      },
    ],
    notFound(),
  );
  await assert.rejects(queryWithRetry(h, statusQuery), WorkflowNotFoundError);
  assert.equal(queries(), 1);
});

test('a workflow that has ended fails at once', async () => {
  const { h } = handle(
    [
      () => {
        throw notFound();
      },
    ],
    'COMPLETED',
  );
  await assert.rejects(queryWithRetry(h, statusQuery), WorkflowNotFoundError);
});
