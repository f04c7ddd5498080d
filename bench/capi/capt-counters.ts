import { fetchMetrics, groupList, groupTotal, parseMetrics, sumBy, type CounterSource, type Counters } from './step-counters';

const temporalMetrics = ['service_requests', 'persistence_requests', 'service_error_with_type'] as const;

/**
 * The history service's requests that are a unit of Temporal work. It sees every one, whether a client,
 * a worker or another workflow asked (a signal from a workflow never reaches the frontend).
 */
const work: Record<string, string[]> = {
  workflowTasks: ['RespondWorkflowTaskCompleted'],
  workflowTasksFailed: ['RespondWorkflowTaskFailed'],
  activities: ['RespondActivityTaskCompleted'],
  activitiesFailed: ['RespondActivityTaskFailed', 'RespondActivityTaskCanceled'],
  heartbeats: ['RecordActivityTaskHeartbeat'],
  signals: ['SignalWorkflowExecution', 'SignalWithStartWorkflowExecution'],
  workflowsStarted: ['StartWorkflowExecution', 'SignalWithStartWorkflowExecution'],
  queries: ['QueryWorkflow'],
  updates: ['UpdateWorkflowExecution'],
};

/** capt's counters: the Temporal dev server's /metrics (its frontend, history and persistence requests). */
export function captCounters(metricsUrl: string): CounterSource {
  return {
    async read(): Promise<Counters> {
      const samples = parseMetrics(await fetchMetrics(metricsUrl), temporalMetrics);
      const requests = (service: string) => sumBy(samples, 'service_requests', (l) => (l.service_name === service ? l.operation : undefined));
      const history = requests('history');
      return {
        temporalWork: Object.fromEntries(Object.entries(work).map(([name, ops]) => [name, ops.reduce((sum, op) => sum + (history[op] ?? 0), 0)])),
        frontendRequests: requests('frontend'),
        historyRequests: history,
        persistenceByOperation: sumBy(samples, 'persistence_requests', (l) => l.operation),
        serviceErrorsByType: sumBy(samples, 'service_error_with_type', (l) => l.error_type),
      };
    },
    describe: (d: Counters) => [
      `Temporal: ${groupList(d, 'temporalWork')}`,
      `frontend ${groupTotal(d, 'frontendRequests')} requests (${groupList(d, 'frontendRequests')})`,
      `persistence ${groupTotal(d, 'persistenceByOperation')}`,
      `errors ${groupTotal(d, 'serviceErrorsByType')}`,
    ].join(', '),
  };
}
