import { proxyActivities } from '@temporalio/workflow';
import type * as activities from '../activities/smoke-activities';

const { ensureNamespace, readConfigMap } = proxyActivities<typeof activities>({ startToCloseTimeout: '30s' });
const { writeConfigMapSlowly } = proxyActivities<typeof activities>({
  startToCloseTimeout: '5m',
  // Short, so that a killed worker's attempt is abandoned quickly and retried elsewhere.
  heartbeatTimeout: '3s',
  retry: { initialInterval: '200ms' },
});

export interface SmokeInput {
  /** A file on the worker's host: the kubeconfig itself stays out of history. */
  kubeconfig: string;
  namespace: string;
  configMap: string;
  entries: [string, string][];
  pauseMs: number;
}

export interface SmokeResult {
  namespaceUid: string;
  data: Record<string, string>;
  resumedFrom: number;
}

/** Creates a Namespace and a ConfigMap in a real apiserver and reads them back. */
export async function smokeWorkflow(input: SmokeInput): Promise<SmokeResult> {
  const namespaceUid = await ensureNamespace(input.kubeconfig, input.namespace);
  const { resumedFrom } = await writeConfigMapSlowly(
    input.kubeconfig,
    input.namespace,
    input.configMap,
    input.entries,
    input.pauseMs,
  );
  const data = await readConfigMap(input.kubeconfig, input.namespace, input.configMap);
  return { namespaceUid, data, resumedFrom };
}
