import { isIP } from 'node:net';
import type { Logger } from 'pino';
import { conversionSchemas } from '../conversion/convert';
import type { Json } from '../conversion/json-tree';
import { ManagementApi } from '../management-api/api-client';
import { readWebhookServingSecret, secretText, type SecretRef } from '../management-api/webhook-serving-secret';
import { ephemeralWebhookServing, servingExpiry, type ServingCertificate } from '../pki/webhook-serving';
import type { Admission } from './admission';
import { startAdmissionWebhook, type AdmissionWebhook } from './admission-webhook';
import { conversionPath, convertedCrds } from './conversion-registration';
import { conversionRoute } from './conversion-review';
import { defaultingRoute, mutatePath } from './defaulting-route';
import { validatePath, validatingRoute } from './validating-route';
import { registerWebhooks, waitForWebhookCalls } from './webhook-registration';

/** How a bridge serves the defaulting, validating and conversion webhooks. */
export type WebhookServing =
  /** On 127.0.0.1:port (0: any free), registered by the bridge itself with an authority made at this start. */
  | { port: number }
  /**
   * As `capt init --webhook-url` registered them, with the certificate of `secret`, on `listen` (default: the
   * registered URL's address, when it is an IP address). Nothing is registered.
   */
  | { secret: SecretRef; listen?: { host: string; port: number } };

interface ServingPlan {
  host: string;
  port: number;
  certificate: ServingCertificate;
  /** Where init's registrations point; undefined when the bridge registers where it listens. */
  url?: string;
}

/** Where to listen, and with what certificate, for `serving`. */
async function servingPlan(api: ManagementApi, serving: WebhookServing): Promise<ServingPlan> {
  if ('port' in serving)
    return { host: '127.0.0.1', port: serving.port, certificate: await ephemeralWebhookServing('127.0.0.1') };
  const { serving: certificate, webhook } = await readWebhookServingSecret(api, serving.secret);
  const listen = serving.listen ?? (isIP(webhook.host) ? webhook : undefined);
  if (!listen)
    throw new Error(
      `--webhook-listen HOST:PORT is needed: Secret ${secretText(serving.secret)} was made for ${webhook.url}, whose host is a DNS name; give the address of this host it leads to`,
    );
  return { host: listen.host, port: listen.port, certificate, url: webhook.url };
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
    webhook = await startAdmissionWebhook({
      host: plan.host,
      port: plan.port,
      serving: plan.certificate,
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
    log.info(
      {
        url,
        listen: webhook.url,
        registeredBy: plan.url ? 'capt init' : 'this bridge',
        servingCertificateUntil: servingExpiry(plan.certificate.cert),
        conversionCrds: crds.length,
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
