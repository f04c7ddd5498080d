import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { coreTaskQueue, ownersTaskQueue } from '../../src/contract/task-queues';
import { maxConcurrentWorkflowTasks } from '../../src/worker/start-workers';
import { MachineHarness } from '../fixtures/machine-harness';
import { until } from '../fixtures/until';
import { metricSum } from '../fixtures/worker-metrics';

const h = new MachineHarness(undefined, { metrics: true });
before(() => h.start());
after(() => h.stop());

test("each of a worker's workflow queues has capt's workflow-task and local-activity slots (200), not the SDK's 40 and 100: machines' tasks mostly wait on their reports", async () => {
  for (const task_queue of [coreTaskQueue, ownersTaskQueue])
    for (const worker_type of ['WorkflowWorker', 'LocalActivityWorker']) {
      const slots = (name: string) => metricSum(h.metricsUrl!, name, { task_queue, worker_type });
      // The SDK publishes its slot gauges once its pollers start.
      const total = await until(
        `${task_queue}'s ${worker_type} slot gauges`,
        async () =>
          (await slots('temporal_worker_task_slots_available')) + (await slots('temporal_worker_task_slots_used')) ||
          undefined,
        { timeoutMs: 60_000 },
      );
      assert.equal(total, maxConcurrentWorkflowTasks, `${task_queue} ${worker_type}`);
    }
});
