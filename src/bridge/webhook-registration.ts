import { setTimeout as sleep } from 'node:timers/promises';
import type { ManagementApi } from '../management-api/api-client';
import { crdFieldManager } from '../management-api/crd-install';
import type { AdmissionWebhook } from './admission-webhook';
import { conversionPath, pointConversionAt, waitForOlderVersions, type Crd } from './conversion-registration';
import { resourceSetResources, reviewedKinds } from './admission-rules';
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
    webhooks: [admissionWebhook(webhookName, url, caBundle, reviewedKinds, resourceSetResources)],
  };
}

/**
 * Points the apiserver at capt's webhooks under `url` (`https://HOST:PORT`), trusting `caBundle`: the defaulting
 * and validating configurations and the converted CRDs (v1beta1 served). Server-side apply, so a restarted
 * bridge replaces the URL and authority, and a repeat with the same values changes nothing. Returns the
 * converted CRDs' names.
 */
export async function registerWebhooks(api: ManagementApi, url: string, caBundle: string): Promise<string[]> {
  await api.apply(defaultingConfiguration(`${url}${mutatePath}`, caBundle), crdFieldManager);
  await api.apply(validatingWebhookConfiguration(`${url}${validatePath}`, caBundle), crdFieldManager);
  return pointConversionAt(api, `${url}${conversionPath}`, caBundle);
}

/**
 * A v1beta1 Cluster nothing stores (a dry run): its creation has the apiserver call all three webhooks, the
 * conversion to v1beta2 first, then defaulting and validation of the converted object.
 */
const probe = {
  apiVersion: 'cluster.x-k8s.io/v1beta1',
  kind: 'Cluster',
  metadata: { name: 'capt-webhook-probe', namespace: 'default' },
  spec: { paused: true },
};

/**
 * Until the apiserver calls the webhooks this process serves (it reads a new registration through an informer,
 * a moment later), then until every converted kind serves v1beta1. After this, `kubectl apply` is defaulted and
 * refused synchronously, and v1beta1 is served. `url` is where the registrations point.
 */
export async function waitForWebhookCalls(
  api: ManagementApi,
  webhook: AdmissionWebhook,
  url: string,
  crds: Crd[],
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const paths = [mutatePath, validatePath, conversionPath];
  const called = () => paths.every((path) => webhook.answered(path) > 0);
  while (!called()) {
    if (Date.now() > deadline) {
      const refused = webhook.refused()
        ? `; ${webhook.refused()} calls refused for want of the apiserver's client certificate: check that its --admission-control-config-file gives it the one capt issued`
        : '';
      throw new Error(
        `the management API did not call the webhooks registered at ${url} within ${timeoutMs / 1000} s (answered: ${paths.map((p) => `${p} ${webhook.answered(p)}`).join(', ')}); check that the URL reaches this bridge and that the registrations carry its authority${refused}`,
      );
    }
    await api.dryRunCreate(probe);
    if (!called()) await sleep(200);
  }
  await waitForOlderVersions(api, crds, Math.max(deadline - Date.now(), 1_000));
}
