import type { ManagementApi } from '../management-api/api-client';
import { defaultWebhookSecret, ensureWebhookServingSecret, secretText } from '../management-api/webhook-serving-secret';
import type { WebhookUrl } from '../management-api/webhook-url';
import { defaultingConfigurationName } from './defaulting-registration';
import { registerWebhooks, webhookConfigurationName } from './webhook-registration';

const bridgeCommand = `capt bridge --kubeconfig FILE --webhook-secret ${secretText(defaultWebhookSecret)}`;

/** What `capt init` says without --webhook-url: nothing of the webhooks is touched. */
export const webhooksNotInstalled = `webhooks not installed (kubectl apply is neither defaulted nor checked by capt, v1beta1 not served): run capt init --kubeconfig FILE --webhook-url https://HOST:PORT, HOST:PORT where the apiserver reaches ${bridgeCommand}`;

/**
 * `capt init --webhook-url`: the CA and serving certificate in their Secret (kept while they serve), then the
 * defaulting, validating and conversion webhooks registered at the URL with that CA. Returns what it did, a
 * line each.
 */
export async function installWebhooks(api: ManagementApi, webhook: WebhookUrl): Promise<string[]> {
  const { caBundle, done } = await ensureWebhookServingSecret(api, webhook);
  const converted = await registerWebhooks(api, webhook.url, caBundle);
  return [
    done,
    `webhooks registered at ${webhook.url}: MutatingWebhookConfiguration ${defaultingConfigurationName} (/mutate), ValidatingWebhookConfiguration ${webhookConfigurationName} (/validate), ${converted.length} CRDs converted (/convert, v1beta1 served); serve them with ${bridgeCommand} where that URL reaches it`,
  ];
}
