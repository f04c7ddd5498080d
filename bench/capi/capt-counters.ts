import { readFile, readdir, readlink } from 'node:fs/promises';
import {
  fetchMetrics,
  groupList,
  groupTotal,
  parseMetrics,
  sumBy,
  type CounterSource,
  type Counters,
} from './step-counters';

const temporalMetrics = [
  'service_requests',
  'persistence_requests',
  'service_error_with_type',
  'service_errors_resource_exhausted',
] as const;

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

/** The TCP ports `pid` listens on: its sockets' inodes found in the kernel's table of listening sockets. */
async function listeningPorts(pid: number): Promise<number[]> {
  const inodes = new Set<string>();
  for (const fd of await readdir(`/proc/${pid}/fd`).catch(() => [] as string[])) {
    const inode = /^socket:\[(\d+)\]$/.exec(await readlink(`/proc/${pid}/fd/${fd}`).catch(() => ''))?.[1];
    if (inode) inodes.add(inode);
  }
  const ports: number[] = [];
  for (const table of ['tcp', 'tcp6']) {
    for (const line of (await readFile(`/proc/${pid}/net/${table}`, 'utf8').catch(() => '')).split('\n').slice(1)) {
      const [, local, , state, , , , , , inode] = line.trim().split(/\s+/);
      if (state === '0A' && inode && inodes.has(inode)) ports.push(parseInt(local!.split(':')[1]!, 16));
    }
  }
  return ports;
}

/**
 * The dev server serves Prometheus /metrics on a port it picks itself (the SDK that starts it passes no
 * --metrics-port): the one of its listening ports whose /metrics holds Temporal's request counters.
 */
export async function temporalMetricsUrl(serverPids: number[]): Promise<string> {
  for (const pid of serverPids) {
    for (const port of await listeningPorts(pid)) {
      const url = `http://127.0.0.1:${port}/metrics`;
      if ((await fetchMetrics(url)).includes('service_requests')) return url;
    }
  }
  throw new Error(
    `no /metrics with Temporal's counters on any port the dev server (pids ${serverPids.join(', ') || 'none'}) listens on`,
  );
}

/** capt's counters: the Temporal dev server's /metrics (its frontend, history and persistence requests). */
export function captCounters(metricsUrl: string): CounterSource {
  return {
    async read(): Promise<Counters> {
      const samples = parseMetrics(await fetchMetrics(metricsUrl), temporalMetrics);
      const requests = (service: string) =>
        sumBy(samples, 'service_requests', (l) => (l.service_name === service ? l.operation : undefined));
      const history = requests('history');
      return {
        temporalWork: Object.fromEntries(
          Object.entries(work).map(([name, ops]) => [name, ops.reduce((sum, op) => sum + (history[op] ?? 0), 0)]),
        ),
        frontendRequests: requests('frontend'),
        historyRequests: history,
        persistenceByOperation: sumBy(samples, 'persistence_requests', (l) => l.operation),
        serviceErrorsByType: sumBy(samples, 'service_error_with_type', (l) => l.error_type),
        // Which calls were refused as ResourceExhausted, and why (a busy workflow, a rate limit, ...).
        resourceExhaustedByOperation: sumBy(
          samples,
          'service_errors_resource_exhausted',
          (l) => `${l.service_name}/${l.operation}`,
        ),
        resourceExhaustedByCause: sumBy(
          samples,
          'service_errors_resource_exhausted',
          (l) => l.resource_exhausted_cause,
        ),
      };
    },
    describe: (d: Counters) =>
      [
        `Temporal: ${groupList(d, 'temporalWork')}`,
        `frontend ${groupTotal(d, 'frontendRequests')} requests (${groupList(d, 'frontendRequests')})`,
        `persistence ${groupTotal(d, 'persistenceByOperation')}`,
        `errors ${groupTotal(d, 'serviceErrorsByType')}`,
        `ResourceExhausted by cause (${groupList(d, 'resourceExhaustedByCause')}) and call (${groupList(d, 'resourceExhaustedByOperation')})`,
      ].join(', '),
  };
}
