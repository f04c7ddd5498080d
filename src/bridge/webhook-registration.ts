import { setTimeout as sleep } from 'node:timers/promises';
import type { ManagementApi } from '../management-api/api-client';
import { crdFieldManager } from '../management-api/crd-install';
import type { AdmissionWebhook } from './admission-webhook';
import { reviewedKinds } from './admission-rules';
import { defaultingConfiguration } from './defaulting-registration';
import { mutatePath } from './defaulting-route';
import { validatePath } from './validating-route';
import { admissionWebhook } from './webhook-configuration';

/** The ValidatingWebhookConfiguration's name and its one webhook's (kubectl prints the latter in a refusal). */
export const webhookConfigurationName = 'capt-validation';
export const webhookName = 'validation.capt.cluster.x-k8s.io';
/**
 * The configuration that has the apiserver ask the validating webhook at `url` about the kinds a Cluster's
 * manifest is made of. failurePolicy Ignore: the bridge loads every manifest again before it hands it to a
 * workflow and reports a refusal on the Cluster, so an object admitted while no bridge answers is never
 * carried out; Fail would refuse every write of these kinds whenever the bridge restarts.
 */
export function validatingWebhookConfiguration(url: string, caBundle: string): Record<string, unknown> {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name: webhookConfigurationName },
    webhooks: [admissionWebhook(webhookName, url, caBundle, reviewedKinds)],
  };
}

/** A Cluster nothing stores (a dry run): its creation makes the apiserver call both webhooks. */
const probe = {
  apiVersion: 'cluster.x-k8s.io/v1beta2',
  kind: 'Cluster',
  metadata: { name: 'capt-webhook-probe', namespace: 'default' },
  spec: { paused: true },
};

/**
 * Registers the defaulting and validating webhooks (server-side apply: a restarted bridge replaces the URL
 * and authority), then waits until the apiserver calls both: it reads configurations through an informer, a
 * moment later. After this, `kubectl apply` is defaulted and refused synchronously.
 */
export async function registerAdmissionWebhook(
  api: ManagementApi,
  webhook: AdmissionWebhook,
  timeoutMs = 30_000,
): Promise<void> {
  await api.apply(defaultingConfiguration(`${webhook.url}${mutatePath}`, webhook.caBundle), crdFieldManager);
  await api.apply(validatingWebhookConfiguration(`${webhook.url}${validatePath}`, webhook.caBundle), crdFieldManager);
  const deadline = Date.now() + timeoutMs;
  const called = () => webhook.answered(mutatePath) > 0 && webhook.answered(validatePath) > 0;
  while (!called()) {
    if (Date.now() > deadline)
      throw new Error(
        `the management API did not call the admission webhooks at ${webhook.url} within ${timeoutMs / 1000} s of their registration`,
      );
    await api.dryRunCreate(probe);
    if (!called()) await sleep(200);
  }
}
