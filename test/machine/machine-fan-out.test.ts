import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { MockActivityEnvironment, type TestWorkflowEnvironment } from '@temporalio/testing';
import { requestMachineDeletions, startMachineWorkflows } from '../../activities/machine/machine-fan-out';
import type { MachineSpec } from '../../src/contract/machine';
import { machineWorkflowId } from '../../src/contract/workflow-ids';
import { startTemporal } from '../fixtures/temporal';
import { workerSpec } from '../fixtures/worker-spec';

// A real Temporal server and no worker: the machines stay where the activity left them, started or not.
let env: TestWorkflowEnvironment;
before(async () => {
  env = await startTemporal();
});
after(() => env?.teardown());

const spec = (name: string): MachineSpec => workerSpec('fan', name);
const machines = (names: string[]) => names.map((name) => ({ spec: spec(name), summary: `Machine ${name}` }));

test("machine fan-out: a retried start neither loses nor duplicates a machine, another owner's name is refused, deletion requests skip machines already gone", async () => {
  const activity = new MockActivityEnvironment({}, { client: env.client });
  const names = Array.from({ length: 120 }, (_, i) => `fan-${String(i).padStart(3, '0')}`);
  assert.deepEqual(await activity.run(startMachineWorkflows, { batch: 'b-1', machines: machines(names) }), []);
  // The same batch again, as a retry after a lost completion: every machine is recognised as its own.
  assert.deepEqual(await activity.run(startMachineWorkflows, { batch: 'b-1', machines: machines(names) }), []);
  // Another batch asking for a name that is taken is told so, and starts nothing.
  assert.deepEqual(
    await activity.run(startMachineWorkflows, { batch: 'b-2', machines: machines(['fan-007', 'fan-new']) }),
    ['fan-007'],
  );

  const running = [];
  for await (const wf of env.client.workflow.list({ query: 'WorkflowId STARTS_WITH "machine/default/fan-"' }))
    running.push(wf.workflowId);
  assert.equal(running.length, 121, 'one workflow per name, none twice');
  const first = await env.client.workflow.getHandle(machineWorkflowId('default', 'fan-000')).describe();
  assert.equal(first.memo?.batch, 'b-1');
  assert.equal(first.searchAttributes.CaptPhase?.[0], 'Provisioning');

  await env.client.workflow
    .getHandle(machineWorkflowId('default', 'fan-001'))
    .terminate('gone before its deletion was asked for');
  await activity.run(requestMachineDeletions, {
    namespace: 'default',
    names: ['fan-000', 'fan-001', 'fan-never'],
    clusterDeleting: false,
  });
  const history = await env.client.workflow.getHandle(machineWorkflowId('default', 'fan-000')).fetchHistory();
  assert.ok(
    history.events!.some((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'requestMachineDeletion'),
    'the deletion request reached fan-000',
  );
  for (const id of [...running])
    await env.client.workflow
      .getHandle(id)
      .terminate('test over')
      .catch(() => undefined);
});
