import { diagnosticsPort } from './capi-management';
import { managerNames } from './capi-modules';
import type { ManagementApi } from '../../src/management-api/api-client';
import {
  fetchMetrics,
  groupList,
  groupTotal,
  parseMetrics,
  sumBy,
  type CounterSource,
  type Counters,
} from './step-counters';

const apiserverMetrics = [
  'apiserver_request_total',
  // One sample per CRD conversion the apiserver asked a webhook for (a list of N objects is one call).
  'apiserver_crd_conversion_webhook_duration_seconds_count',
  'apiserver_admission_webhook_admission_duration_seconds_count',
] as const;

const managerMetrics = [
  'controller_runtime_reconcile_total',
  'controller_runtime_reconcile_errors_total',
  'workqueue_retries_total',
  'rest_client_requests_total',
] as const;

const resourceOf = (l: Record<string, string>) =>
  l.resource ? `${l.resource}${l.subresource ? `/${l.subresource}` : ''}` : 'non-resource';

/** The management apiserver's request, conflict and webhook counts. */
async function apiserverCounters(api: ManagementApi): Promise<Counters> {
  const samples = parseMetrics(await api.getText('/metrics'), apiserverMetrics);
  return {
    requestsByVerb: sumBy(samples, 'apiserver_request_total', (l) => l.verb),
    requestsByCode: sumBy(samples, 'apiserver_request_total', (l) => l.code),
    requestsByResource: sumBy(samples, 'apiserver_request_total', resourceOf),
    conflictsByResource: sumBy(samples, 'apiserver_request_total', (l) =>
      l.code === '409' ? resourceOf(l) : undefined,
    ),
    // Which way it converts says who asked: the managers and the apiserver store v1beta2.
    conversionWebhookByCrd: sumBy(
      samples,
      'apiserver_crd_conversion_webhook_duration_seconds_count',
      (l) => `${l.crd_name?.split('.')[0]} ${l.from_version}->${l.to_version}`,
    ),
    admissionWebhookByName: sumBy(
      samples,
      'apiserver_admission_webhook_admission_duration_seconds_count',
      (l) => `${l.type}:${l.name}`,
    ),
  };
}

/** The four managers' controller-runtime counts (reconciles, errors, retries) and their client-go requests. */
async function managerCounters(): Promise<Counters> {
  const pages = await Promise.all(
    managerNames.map(async (m) => ({
      m,
      samples: parseMetrics(await fetchMetrics(`http://127.0.0.1:${diagnosticsPort(m)}/metrics`), managerMetrics),
    })),
  );
  const all = pages.flatMap((p) => p.samples);
  return {
    reconcilesByController: sumBy(all, 'controller_runtime_reconcile_total', (l) => l.controller),
    reconcileResults: sumBy(all, 'controller_runtime_reconcile_total', (l) => l.result),
    reconcileErrorsByController: sumBy(all, 'controller_runtime_reconcile_errors_total', (l) => l.controller),
    workqueueRetriesByController: sumBy(all, 'workqueue_retries_total', (l) => l.name),
    managerRequestsByManager: Object.fromEntries(
      pages.map((p) => [p.m, sumBy(p.samples, 'rest_client_requests_total', () => 'all').all ?? 0]),
    ),
    managerRequestsByMethodAndCode: sumBy(all, 'rest_client_requests_total', (l) => `${l.method} ${l.code}`),
  };
}

/** Cluster API's counters: the management apiserver's /metrics and each manager's. */
export function capiCounters(api: ManagementApi): CounterSource {
  return {
    read: async () => ({ ...(await apiserverCounters(api)), ...(await managerCounters()) }),
    describe: (d: Counters) =>
      [
        `apiserver ${groupTotal(d, 'requestsByVerb')} requests (${groupList(d, 'requestsByVerb')})`,
        `409 ${groupTotal(d, 'conflictsByResource')}`,
        `conversion webhook ${groupTotal(d, 'conversionWebhookByCrd')}`,
        `admission webhook ${groupTotal(d, 'admissionWebhookByName')}`,
        `managers: ${groupTotal(d, 'reconcilesByController')} reconciles (${groupList(d, 'reconcileResults')})`,
        `${groupTotal(d, 'workqueueRetriesByController')} retries`,
        `${groupTotal(d, 'managerRequestsByManager')} client requests`,
      ].join(', '),
  };
}
