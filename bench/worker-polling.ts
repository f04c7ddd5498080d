import { coreTaskQueue } from '../src/contract/task-queues';
import { metricSum } from '../test/fixtures/worker-metrics';

/**
 * Whether capt's worker was asking for machines' workflow tasks, from its metrics: capt-core's free workflow-task
 * slots, its pollers of the normal and sticky queues, and workflows cached (both queues' workers). Machines that
 * wait while these show free slots and pollers wait on Temporal, not on the worker.
 */
export async function workerPolling(metricsUrl: string): Promise<Record<string, number> | undefined> {
  const core = { task_queue: coreTaskQueue };
  const read = (name: string, labels: Record<string, string> = {}) => metricSum(metricsUrl, name, labels);
  try {
    return {
      workflowSlotsAvailable: await read('temporal_worker_task_slots_available', {
        worker_type: 'WorkflowWorker',
        ...core,
      }),
      workflowPollers: await read('temporal_num_pollers', { poller_type: 'workflow_task', ...core }),
      stickyPollers: await read('temporal_num_pollers', { poller_type: 'sticky_workflow_task', ...core }),
      stickyCacheSize: await read('temporal_sticky_cache_size'),
    };
  } catch {
    return undefined;
  }
}
