import type { KeyPair } from '../pki/certificates';
import { clientAuthorityProblem, keepOrIssueWebhookClient, type WebhookClient } from '../pki/webhook-client';
import {
  authorityProblem,
  issueWebhookServing,
  newWebhookAuthority,
  certificateEnds,
  servingProblem,
  type ServingCertificate,
} from '../pki/webhook-serving';
import type { ManagementApi } from './api-client';
import { crdFieldManager } from './crd-install';
import { parseWebhookUrl, WebhookAddressError, type WebhookUrl } from './webhook-url';

/**
 * The Secret that holds capt's webhook CA and serving certificate in the management API, and the client
 * certificate the apiserver presents to the webhooks with its CA: `capt init --webhook-url` makes it, `capt
 * bridge --webhook-secret` serves with it and answers only callers with that client certificate. Its at-rest
 * encryption is the operator's, as for every Secret of that API.
 */
export interface SecretRef {
  namespace: string;
  name: string;
}

export const defaultWebhookSecret: SecretRef = { namespace: 'capt-system', name: 'capt-webhook-serving' };

/** The URL init registered, kept on the Secret: the bridge listens where it points unless told otherwise. */
export const webhookUrlAnnotation = 'capt.cluster.x-k8s.io/webhook-url';

const tlsType = 'kubernetes.io/tls';
/** How to make the Secret again, for every message that finds it missing or unusable. */
const remedy = 'run capt init --kubeconfig FILE --webhook-url https://HOST:PORT to make it';

export const secretText = (ref: SecretRef) => `${ref.namespace}/${ref.name}`;

interface StoredSecret {
  type?: string;
  metadata: { annotations?: Record<string, string> };
  data?: Record<string, string>;
}

const field = (secret: StoredSecret, key: string) =>
  secret.data?.[key] === undefined ? '' : Buffer.from(secret.data[key], 'base64').toString('utf8');

const pairOf = (secret: StoredSecret, cert: string, key: string): KeyPair => ({
  cert: field(secret, cert),
  key: field(secret, key),
});

const label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** What is wrong with the reference as Kubernetes names go (it becomes the Secret's path), or undefined. */
export function secretRefProblem({ namespace, name }: SecretRef): string | undefined {
  if (namespace.length > 63 || !label.test(namespace))
    return `namespace ${JSON.stringify(namespace)}: lower-case letters, digits and '-', at most 63`;
  if (name.length > 253 || !subdomain.test(name))
    return `name ${JSON.stringify(name)}: lower-case letters, digits, '-' and '.', at most 253`;
  return undefined;
}

async function readSecret(api: ManagementApi, ref: SecretRef): Promise<StoredSecret | undefined> {
  const problem = secretRefProblem(ref);
  if (problem) throw new Error(`Secret ${secretText(ref)}: ${problem}`);
  return (await api.get(`/api/v1/namespaces/${ref.namespace}/secrets/${ref.name}`)) as StoredSecret | undefined;
}

/** How often a bridge serving the Secret reads it again: a certificate init renews there is served this soon. */
export const secretRereadSeconds = 10;

/** The keys of the apiserver's client certificate and key in the Secret (`kubectl get secret -o jsonpath` them). */
export const clientCertKey = 'client.crt';
export const clientKeyKey = 'client.key';

/**
 * The Secret as init writes it: the serving pair in tls.crt/tls.key, the CA (its key too, to renew) beside
 * them, and the apiserver's client pair with its CA likewise.
 */
function servingSecret(ref: SecretRef, webhook: WebhookUrl, ca: KeyPair, serving: KeyPair, client: WebhookClient) {
  const base64 = (text: string) => Buffer.from(text).toString('base64');
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { ...ref, annotations: { [webhookUrlAnnotation]: webhook.url } },
    type: tlsType,
    data: {
      'tls.crt': base64(serving.cert),
      'tls.key': base64(serving.key),
      'ca.crt': base64(ca.cert),
      'ca.key': base64(ca.key),
      'client-ca.crt': base64(client.ca.cert),
      'client-ca.key': base64(client.ca.key),
      [clientCertKey]: base64(client.client.cert),
      [clientKeyKey]: base64(client.client.key),
    },
  };
}

/**
 * Makes sure the Secret holds a CA and a serving certificate for the URL's host, and a client certificate for
 * the apiserver, and returns the CA (the caBundle to register) with lines saying what was done. What still
 * serves is kept, so a second init changes nothing: a CA while it outlives a new certificate, a certificate
 * while it (the serving one: names the host and) is not within its renewal margin. Running bridges read the
 * Secret again and serve a new certificate within seconds; a new client certificate under a kept client CA they
 * trust at once.
 * `clientIssued`: the apiserver must be given the client certificate.
 */
export async function ensureWebhookServingSecret(
  api: ManagementApi,
  webhook: WebhookUrl,
  ref: SecretRef = defaultWebhookSecret,
): Promise<{ caBundle: string; done: string[]; clientIssued: boolean }> {
  const existing = await readSecret(api, ref);
  if (existing && existing.type !== tlsType)
    throw new Error(
      `Secret ${secretText(ref)} is of type ${existing.type ?? 'none'}, not ${tlsType}: it is not capt's; move it away (kubectl -n ${ref.namespace} delete secret ${ref.name}) and run capt init again`,
    );
  const keptCa = existing && pairOf(existing, 'ca.crt', 'ca.key');
  const caWhy = keptCa && authorityProblem(keptCa);
  const ca = keptCa && !caWhy ? keptCa : await newWebhookAuthority();
  // A serving certificate is kept only under the CA it was issued by.
  const keptServing = keptCa && !caWhy ? pairOf(existing, 'tls.crt', 'tls.key') : undefined;
  const servingWhy = keptServing && servingProblem(keptServing, ca.cert, webhook.host, true);
  const serving = keptServing && !servingWhy ? keptServing : await issueWebhookServing(ca, webhook.host);
  const keptClient = existing?.data?.['client-ca.crt']
    ? { ca: pairOf(existing, 'client-ca.crt', 'client-ca.key'), client: pairOf(existing, clientCertKey, clientKeyKey) }
    : undefined;
  const client = await keepOrIssueWebhookClient(keptClient);
  const where = `Secret ${secretText(ref)}`;
  const until = `for ${webhook.host} until ${certificateEnds(serving.cert)}`;
  const served = `each capt bridge --webhook-secret serves it within ${secretRereadSeconds} s, without a restart`;
  const done = !existing
    ? `created ${where}: a new webhook CA and a serving certificate ${until}`
    : caWhy
      ? `replaced the webhook CA in ${where} (${caWhy}) and its serving certificate ${until}; ${served}`
      : servingWhy
        ? `issued a new serving certificate ${until} in ${where}, its CA kept (the previous certificate: ${servingWhy}); ${served}`
        : `kept the webhook CA and serving certificate ${until} in ${where}`;
  const clientDone = `${client.renewed ? `made ${client.renewed}` : 'kept the client CA and client certificate'} for the apiserver until ${certificateEnds(client.client.cert)} in ${where}`;
  if (
    serving !== keptServing ||
    client.renewed ||
    existing?.metadata.annotations?.[webhookUrlAnnotation] !== webhook.url
  ) {
    await api.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ref.namespace } });
    await api.apply(servingSecret(ref, webhook, ca, serving, client), crdFieldManager);
  }
  return { caBundle: ca.cert, done: [done, clientDone], clientIssued: Boolean(client.renewed) };
}

/**
 * What a bridge serves with: the Secret's serving certificate, the URL it was made for and the authority of
 * the apiserver's client certificate (undefined in a Secret made before init issued one), refused with a
 * message naming the Secret when it is missing, incomplete or no longer serves that URL's host.
 */
export async function readWebhookServingSecret(
  api: ManagementApi,
  ref: SecretRef,
): Promise<{ serving: ServingCertificate; webhook: WebhookUrl; clientCa?: string }> {
  const where = `Secret ${secretText(ref)}`;
  const secret = await readSecret(api, ref).catch((err: Error) => {
    throw new Error(`cannot read ${where}: ${err.message}`, { cause: err });
  });
  if (!secret) throw new Error(`${where} not found in the management API: ${remedy}`);
  const url = secret.metadata.annotations?.[webhookUrlAnnotation];
  let webhook: WebhookUrl;
  try {
    webhook = parseWebhookUrl(url ?? '');
  } catch (err) {
    if (!(err instanceof WebhookAddressError)) throw err;
    const message = `${where}: its annotation ${webhookUrlAnnotation} is not the URL init writes (${err.message}); ${remedy}`;
    throw new Error(message, { cause: err });
  }
  const serving = pairOf(secret, 'tls.crt', 'tls.key');
  const caBundle = field(secret, 'ca.crt');
  const missing = ['tls.crt', 'tls.key', 'ca.crt'].filter((key) => !secret.data?.[key]);
  const why = missing.length
    ? `it has no ${missing.join(', ')}`
    : servingProblem(serving, caBundle, webhook.host, false);
  if (why) throw new Error(`${where}: the serving certificate cannot be used: ${why}; ${remedy}`);
  const clientCa = secret.data?.['client-ca.crt'] ? field(secret, 'client-ca.crt') : undefined;
  const clientWhy = clientCa && clientAuthorityProblem(clientCa);
  if (clientWhy) throw new Error(`${where}: its client-ca.crt cannot be used: ${clientWhy}; ${remedy}`);
  return { serving: { ...serving, caBundle }, webhook, clientCa };
}
