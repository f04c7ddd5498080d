import { proxyActivities } from '@temporalio/workflow';
import type * as activities from '../../activities';
import type { ProviderActivities } from '../../providers/provider-activities';
import {
  machineCertificatesPageSize,
  type CertificateInventoryInput,
  type CertificateInventoryPage,
} from '../../src/contract/certificates';
import { providerTaskQueue } from '../../src/contract/task-queues';
import { rethrowActivityCause } from '../shared/activity-cause';

const { clusterCertificateAuthorities } = proxyActivities<typeof activities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 3, initialInterval: '1 second' },
  summary: "read the cluster's certificate authorities",
});

/**
 * One page of `capt get certificates` for a cluster, in a workflow of its own (`certificates/<ns>/<cluster>/<id>`)
 * that the client starts and waits for: the CAs from the cluster's secrets (which only workers read), and a page
 * of machines read by the cluster's provider, on its own task queue.
 */
export async function certificateInventoryWorkflow(
  input: CertificateInventoryInput,
): Promise<CertificateInventoryPage> {
  const { machineCertificates } = proxyActivities<ProviderActivities>({
    taskQueue: providerTaskQueue(input.provider),
    startToCloseTimeout: '2 minutes',
    heartbeatTimeout: '20 seconds',
    retry: { maximumAttempts: 3, initialInterval: '1 second' },
    summary: "read the certificates the cluster's machines hold",
  });
  const [authorities, page] = await Promise.all([
    input.after === undefined ? clusterCertificateAuthorities(input.namespace, input.cluster) : [],
    machineCertificates({
      namespace: input.namespace,
      cluster: input.cluster,
      ...(input.after !== undefined ? { after: input.after } : {}),
      limit: machineCertificatesPageSize,
    }),
  ]).catch(rethrowActivityCause);
  return { authorities, ...page };
}
