import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { CaptClient, RejectedError } from '../../src/client/capt-client';
import { clusterHealthWorkflowId, machineWorkflowId } from '../../src/contract/workflow-ids';
import { unknownSignalsKept } from '../../src/contract/unknown-signals';
import { bundle, startTemporal } from '../fixtures/temporal';
import { olderBuildMachineWorkflow, unknownSignalsQuery } from '../workflows/older-build';

// A real Temporal and workers without activities: messages are all these tests send.
let env: TestWorkflowEnvironment;
let client: CaptClient;
before(async () => {
  env = await startTemporal();
  client = await CaptClient.connect({ address: env.address });
});
after(async () => {
  await client?.close();
  await env?.teardown();
});

async function withWorker<T>(taskQueue: string, workflowsPath: string, run: () => Promise<T>): Promise<T> {
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: await bundle(workflowsPath),
    dataConverter: env.client.options.dataConverter,
  });
  return worker.runUntil(run);
}

test("an update the workflow's older code does not know is refused with what, where and what to do, and changes nothing", async () => {
  await withWorker('older-build', require.resolve('../workflows/older-build'), async () => {
    const handle = await env.client.workflow.start(olderBuildMachineWorkflow, {
      taskQueue: 'older-build',
      workflowId: machineWorkflowId('default', 'old-1'),
      args: ['old-1'],
    });
    await assert.rejects(client.deleteMachine('default', 'old-1'), (err: Error) => {
      assert.ok(err instanceof RejectedError, `a RejectedError, not ${err.name}: ${err.message}`);
      assert.match(
        err.message,
        /^workflow machine\/default\/old-1 does not know the update 'deleteMachine': it runs older capt code than this client, and nothing was changed\. Upgrade capt's workers/,
      );
      return true;
    });
    const events = (await handle.fetchHistory()).events ?? [];
    assert.ok(
      !events.some(
        (e) => e.workflowExecutionUpdateAcceptedEventAttributes || e.workflowExecutionUpdateCompletedEventAttributes,
      ),
      'the refused update left nothing in history',
    );
    await handle.terminate('test over');
  });
});

test('a signal the workflow has no handler for is counted in its status, newest names kept, never dropped silently', async () => {
  await withWorker('older-build', require.resolve('../workflows/older-build'), async () => {
    const handle = await env.client.workflow.start(olderBuildMachineWorkflow, {
      taskQueue: 'older-build',
      workflowId: machineWorkflowId('default', 'old-2'),
      args: ['old-2'],
    });
    const names = Array.from({ length: unknownSignalsKept + 2 }, (_, i) => `fromNewerCode${i}`);
    for (const name of [...names, names.at(-1)!]) await handle.signal(name, { sentBy: 'a newer build' });
    const { unknownSignals } = await handle.query(unknownSignalsQuery);
    assert.deepEqual(
      unknownSignals?.map((s) => [s.name, s.count]),
      [...names.slice(2, -1).map((n) => [n, 1]), [names.at(-1), 2]],
      `the newest ${unknownSignalsKept} names, each with its count`,
    );
    await handle.terminate('test over');
  });
});

test("capt's own workflows record an unknown signal where the UI shows it (the health check waiting for its activity)", async () => {
  await withWorker('capt-core', require.resolve('../../workflows'), async () => {
    const handle = await env.client.workflow.start('clusterHealthWorkflow', {
      taskQueue: 'capt-core',
      workflowId: clusterHealthWorkflowId('default', 'nowhere', 'signals'),
      args: [{ namespace: 'default', cluster: 'nowhere' }],
    });
    await handle.signal('fromNewerCode');
    await handle.signal('fromNewerCode');
    const metadata = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
    assert.match(metadata.currentDetails ?? '', /^Signals without a handler, ignored: fromNewerCode \(2x, last \S+\)$/);
    await handle.terminate('test over');
  });
});
