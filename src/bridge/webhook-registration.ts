import { setTimeout as sleep } from 'node:timers/promises';
import type { ManagementApi } from '../management-api/api-client';
import { crdFieldManager } from '../management-api/crd-install';
import type { AdmissionWebhook } from './admission-webhook';
import { reviewedKinds } from './admission-rules';
import { managedResources } from './management-client';

/** The ValidatingWebhookConfiguration's name and its one webhook's (kubectl prints the latter in a refusal). */
export const webhookConfigurationName = 'capt-validation';
export const webhookName = 'validation.capt.cluster.x-k8s.io';
/** The apiserver's wait for an answer; the webhook decides within 4 s (admission-webhook.ts). */
const timeoutSeconds = 5;

/**
 * The configuration that has the apiserver ask the webhook at `url` about every create and update of the
 * kinds a Cluster's manifest is made of (deletions are never refused). failurePolicy Ignore: the bridge loads
 * every manifest again before it hands it to a workflow and reports a refusal on the Cluster, so an object
 * admitted while no bridge answers is never carried out; Fail would refuse every write of these kinds
 * whenever the bridge restarts.
 */
export function validatingWebhookConfiguration(url: string, caBundle: string): Record<string, unknown> {
  const plurals = new Map<string, string[]>();
  for (const kind of reviewedKinds) {
    const { group, plural } = managedResources[kind];
    plurals.set(group, [...(plurals.get(group) ?? []), plural]);
  }
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name: webhookConfigurationName },
    webhooks: [
      {
        name: webhookName,
        clientConfig: { url, caBundle: Buffer.from(caBundle).toString('base64') },
        rules: [...plurals].map(([group, resources]) => ({
          apiGroups: [group],
          apiVersions: ['v1beta2'],
          operations: ['CREATE', 'UPDATE'],
          resources,
          scope: 'Namespaced',
        })),
        // Objects written in another served version reach the webhook converted to v1beta2.
        matchPolicy: 'Equivalent',
        failurePolicy: 'Ignore',
        sideEffects: 'None',
        timeoutSeconds,
        admissionReviewVersions: ['v1'],
      },
    ],
  };
}

/** A Cluster nothing stores (a dry run): its creation makes the apiserver call the webhook. */
const probe = {
  apiVersion: 'cluster.x-k8s.io/v1beta2',
  kind: 'Cluster',
  metadata: { name: 'capt-webhook-probe', namespace: 'default' },
  spec: { paused: true },
};

/**
 * Registers the webhook (server-side apply: a restarted bridge replaces the URL and authority), then waits
 * until the apiserver calls it: it reads configurations through an informer, a moment later. After this,
 * `kubectl apply` is refused synchronously.
 */
export async function registerAdmissionWebhook(
  api: ManagementApi,
  webhook: AdmissionWebhook,
  timeoutMs = 30_000,
): Promise<void> {
  await api.apply(validatingWebhookConfiguration(webhook.url, webhook.caBundle), crdFieldManager);
  const deadline = Date.now() + timeoutMs;
  while (webhook.answered() === 0) {
    if (Date.now() > deadline)
      throw new Error(
        `the management API did not call the admission webhook at ${webhook.url} within ${timeoutMs / 1000} s of its registration`,
      );
    await api.dryRunCreate(probe);
    if (webhook.answered() === 0) await sleep(200);
  }
}
