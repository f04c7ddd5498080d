import type { ManagementApi } from '../management-api/api-client';
import { admissionConfiguration, webhookClientKubeconfig } from '../management-api/webhook-client-config';
import {
  clientCertKey,
  clientKeyKey,
  defaultWebhookSecret,
  ensureWebhookServingSecret,
  secretText,
  type SecretRef,
} from '../management-api/webhook-serving-secret';
import type { WebhookUrl } from '../management-api/webhook-url';
import { defaultingConfigurationName } from './defaulting-registration';
import { registerWebhooks, webhookConfigurationName } from './webhook-registration';

const bridgeCommand = `capt bridge --kubeconfig FILE --webhook-secret ${secretText(defaultWebhookSecret)}`;

/** What `capt init` says without --webhook-url: nothing of the webhooks is touched. */
export const webhooksNotInstalled = `webhooks not installed (kubectl apply is neither defaulted nor checked by capt, v1beta1 not served): run capt init --kubeconfig FILE --webhook-url https://HOST:PORT, HOST:PORT where the apiserver reaches ${bridgeCommand}`;

/** Where the instructions put the apiserver's files; an operator may choose another folder. */
const apiserverDir = '/etc/kubernetes/capt';

/**
 * How to give the apiserver its client certificate for the webhooks at `webhook`: commands that copy the pair
 * out of the Secret into files only root reads (the key never passes through a terminal), and the two
 * configuration files, which hold paths only.
 */
export function apiserverClientSetup(webhook: WebhookUrl, ref: SecretRef = defaultWebhookSecret): string {
  const file = (name: string) => `${apiserverDir}/${name}`;
  const extract = (key: string, name: string) =>
    `kubectl -n ${ref.namespace} get secret ${ref.name} -o jsonpath='{.data.${key.replace('.', '\\.')}}' | base64 -d > ${file(name)}`;
  const kubeconfigFile = file('webhook-client.kubeconfig');
  // The apiserver looks a webhook's credentials up by the HOST:PORT of its URL.
  const user = webhook.url.slice('https://'.length);
  const indent = (text: string) => text.trimEnd().replace(/^/gm, '    ');
  return [
    `the apiserver must present the client certificate in ${secretText(ref)} to the webhooks (capt bridge refuses other callers); on each kube-apiserver host, as root:`,
    `  (umask 077; mkdir -p ${apiserverDir}; ${extract(clientCertKey, 'webhook-client.crt')}; ${extract(clientKeyKey, 'webhook-client.key')})`,
    `  ${kubeconfigFile}:`,
    indent(webhookClientKubeconfig(user, file('webhook-client.crt'), file('webhook-client.key'))),
    `  ${file('admission-configuration.yaml')} (or add these plugins to the file the apiserver already has):`,
    indent(admissionConfiguration(kubeconfigFile)),
    `  then restart kube-apiserver with --admission-control-config-file=${file('admission-configuration.yaml')}`,
  ].join('\n');
}

/**
 * `capt init --webhook-url`: the CA, serving and client certificates in their Secret (kept while they serve),
 * then the defaulting, validating and conversion webhooks registered at the URL with that CA. Returns what it
 * did, a line each, and how to give the apiserver a client certificate it was issued.
 */
export async function installWebhooks(api: ManagementApi, webhook: WebhookUrl): Promise<string[]> {
  const { caBundle, done, clientIssued } = await ensureWebhookServingSecret(api, webhook);
  const converted = await registerWebhooks(api, webhook.url, caBundle);
  return [
    ...done,
    `webhooks registered at ${webhook.url}: MutatingWebhookConfiguration ${defaultingConfigurationName} (/mutate), ValidatingWebhookConfiguration ${webhookConfigurationName} (/validate), ${converted.length} CRDs converted (/convert, v1beta1 served); serve them with ${bridgeCommand} where that URL reaches it`,
    ...(clientIssued ? [apiserverClientSetup(webhook)] : []),
  ];
}
