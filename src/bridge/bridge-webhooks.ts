import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import type { Logger } from 'pino';
import { conversionSchemas } from '../conversion/convert';
import type { Json } from '../conversion/json-tree';
import { ManagementApi } from '../management-api/api-client';
import {
  readWebhookServingSecret,
  secretRereadSeconds,
  secretText,
  type SecretRef,
} from '../management-api/webhook-serving-secret';
import { clientAuthorityProblem } from '../pki/webhook-client';
import { ephemeralWebhookServing, certificateEnds, type ServingCertificate } from '../pki/webhook-serving';
import type { Admission } from './admission';
import { startAdmissionWebhook, type AdmissionWebhook } from './admission-webhook';
import { conversionPath, convertedCrds } from './conversion-registration';
import { conversionRoute } from './conversion-review';
import { defaultingRoute, mutatePath } from './defaulting-route';
import { validatePath, validatingRoute } from './validating-route';
import { registerWebhooks, waitForWebhookCalls } from './webhook-registration';

interface Callers {
  /** Answer any caller, not only the apiserver: for an apiserver that cannot be given a client certificate. */
  anyCaller?: boolean;
}

/** How a bridge serves the defaulting, validating and conversion webhooks. */
export type WebhookServing =
  /**
   * On 127.0.0.1:port (0: any free), registered by the bridge itself with an authority made at this start;
   * the apiserver's client certificate is checked against the authority in `clientCaFile`.
   */
  | ({ port: number; clientCaFile?: string } & Callers)
  /**
   * As `capt init --webhook-url` registered them, with the certificate of `secret`, on `listen` (default: the
   * registered URL's address, when it is an IP address), the apiserver's client certificate checked against
   * the Secret's client authority. Nothing is registered.
   */
  | ({ secret: SecretRef; listen?: { host: string; port: number } } & Callers);

export interface ServingPlan {
  host: string;
  port: number;
  certificate: ServingCertificate;
  /** The authority of the apiserver's client certificate (PEM); undefined when none was given. */
  clientCa?: string;
  /** Where init's registrations point; undefined when the bridge registers where it listens. */
  url?: string;
}

async function readClientCa(file: string): Promise<string> {
  const pem = await readFile(file, 'utf8').catch((err: Error) => {
    throw new Error(`--webhook-client-ca ${file}: ${err.message}`, { cause: err });
  });
  const problem = clientAuthorityProblem(pem);
  if (problem) throw new Error(`--webhook-client-ca ${file}: ${problem}`);
  return pem;
}

/** Where to listen, with what certificate, and whose callers to answer, for `serving`. */
async function servingPlan(api: ManagementApi, serving: WebhookServing): Promise<ServingPlan> {
  if ('port' in serving)
    return {
      host: '127.0.0.1',
      port: serving.port,
      certificate: await ephemeralWebhookServing('127.0.0.1'),
      clientCa: serving.clientCaFile === undefined ? undefined : await readClientCa(serving.clientCaFile),
    };
  const { serving: certificate, webhook, clientCa } = await readWebhookServingSecret(api, serving.secret);
  const listen = serving.listen ?? (isIP(webhook.host) ? webhook : undefined);
  if (!listen)
    throw new Error(
      `--webhook-listen HOST:PORT is needed: Secret ${secretText(serving.secret)} was made for ${webhook.url}, whose host is a DNS name; give the address of this host it leads to`,
    );
  return { host: listen.host, port: listen.port, certificate, clientCa, url: webhook.url };
}

/**
 * The authority whose client certificate a caller of the admission webhooks must present; undefined, with a
 * warning, when any caller is answered.
 */
export function callersOf(serving: WebhookServing, plan: ServingPlan, log: Logger): string | undefined {
  if (serving.anyCaller) {
    log.warn(
      'the webhooks answer any caller that reaches them, not only the apiserver (--insecure-webhook-any-caller): publish their port to the apiserver alone',
    );
    return undefined;
  }
  if (plan.clientCa) return plan.clientCa;
  throw new Error(
    'port' in serving
      ? '--webhook-port needs --webhook-client-ca FILE: the authority of the client certificate the apiserver presents to webhooks'
      : `Secret ${secretText(serving.secret)} has no client-ca.crt (it was made by a capt init before the webhooks checked their caller): run capt init --kubeconfig FILE --webhook-url ${plan.url} again and give the apiserver the client certificate it adds, or start the bridge with --insecure-webhook-any-caller`,
  );
}

/**
 * `capt init` renews the certificates in its Secret as they near their end: the bridge reads the Secret every
 * few seconds and serves what it holds from the next connection on, without a restart. A Secret it cannot read
 * or that is incomplete is logged, and the certificates served are kept.
 */
async function followSecret(
  kubeconfig: string,
  ref: SecretRef,
  webhook: AdmissionWebhook,
  plan: ServingPlan,
  log: Logger,
): Promise<AdmissionWebhook> {
  const api = await ManagementApi.fromKubeconfig(kubeconfig);
  const served = (certificate: ServingCertificate, clientCa?: string) =>
    `${certificate.cert}${certificate.key}${clientCa ?? ''}`;
  let shown = served(plan.certificate, plan.clientCa);
  let reading = false;
  const timer = setInterval(() => {
    if (reading) return;
    reading = true;
    readWebhookServingSecret(api, ref)
      .then(({ serving, clientCa }) => {
        const next = served(serving, clientCa);
        if (next === shown) return;
        webhook.renew(serving, clientCa);
        shown = next;
        log.info(
          { secret: secretText(ref), servingCertificateUntil: certificateEnds(serving.cert) },
          'webhooks: serving the renewed certificates of the Secret',
        );
      })
      .catch((err: Error) =>
        log.warn(
          { err: err.message, secret: secretText(ref) },
          'webhooks: cannot read the Secret again; serving what it held',
        ),
      )
      .finally(() => (reading = false));
  }, secretRereadSeconds * 1000);
  return {
    ...webhook,
    close: async () => {
      clearInterval(timer);
      api.close();
      await webhook.close();
    },
  };
}

/**
 * Serves the three webhooks for `admission`, and returns once the apiserver calls them: with `{ port }` after
 * registering them itself (`capt dev start`), with `{ secret }` as init registered them. The conversion follows
 * the schemas the apiserver serves, read from the CRDs themselves.
 */
export async function serveWebhooks(opts: {
  kubeconfig: string;
  serving: WebhookServing;
  admission: Admission;
  log: Logger;
}): Promise<AdmissionWebhook> {
  const { log } = opts;
  const api = await ManagementApi.fromKubeconfig(opts.kubeconfig);
  let webhook: AdmissionWebhook | undefined;
  try {
    const crds = await convertedCrds(api);
    const plan = await servingPlan(api, opts.serving);
    const clientCa = callersOf(opts.serving, plan, log);
    webhook = await startAdmissionWebhook({
      host: plan.host,
      port: plan.port,
      serving: plan.certificate,
      clientCa,
      // The apiserver calls conversion webhooks without credentials; a conversion reads nothing but the request.
      anyCaller: [conversionPath],
      routes: {
        [validatePath]: validatingRoute((request) => opts.admission.refusal(request), log),
        [mutatePath]: defaultingRoute(log),
        [conversionPath]: conversionRoute(conversionSchemas(crds as unknown as Json[])),
      },
      log,
    }).catch((err: Error) => {
      throw new Error(
        `cannot serve the webhooks on ${plan.host}:${plan.port}: ${err.message}${'port' in opts.serving ? '' : '; give --webhook-listen an address and port of this host that the registered URL leads to'}`,
      );
    });
    const url = plan.url ?? webhook.url;
    if (!plan.url) await registerWebhooks(api, url, webhook.caBundle);
    await waitForWebhookCalls(api, webhook, url, crds);
    if ('secret' in opts.serving)
      webhook = await followSecret(opts.kubeconfig, opts.serving.secret, webhook, plan, log);
    log.info(
      {
        url,
        listen: webhook.url,
        registeredBy: plan.url ? 'capt init' : 'this bridge',
        servingCertificateUntil: certificateEnds(plan.certificate.cert),
        conversionCrds: crds.length,
        callers: clientCa ? "the apiserver's client certificate (conversion: any)" : 'any',
      },
      'webhooks called by the management API: defaulting, validation, conversion (v1beta1 served)',
    );
    return webhook;
  } catch (err) {
    await webhook?.close();
    throw err;
  } finally {
    api.close();
  }
}
