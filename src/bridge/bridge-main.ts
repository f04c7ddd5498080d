import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { CaptClient } from '../client/capt-client';
import { ManagementApi } from '../management-api/api-client';
import { logger } from '../worker/logging';
import { Admission } from './admission';
import { startAdmissionWebhook, type AdmissionWebhook } from './admission-webhook';
import { Bridge } from './bridge';
import { defaultingRoute, mutatePath } from './defaulting-route';
import { BridgeLease } from './bridge-lease';
import { ManagementClient, managedResources, type ManagedKind } from './management-client';
import { ObjectCache } from './object-cache';
import { validatePath, validatingRoute } from './validating-route';
import { registerAdmissionWebhook } from './webhook-registration';
import { conversionPath, convertedCrds, registerConversionWebhook } from './conversion-registration';
import { conversionRoute } from './conversion-review';
import { conversionSchemas } from '../conversion/convert';
import type { Json } from '../conversion/json-tree';

/**
 * `capt bridge`: the management API's door to capt, in the foreground until `stop` resolves. Temporal is
 * reached as every capt client reaches it (TEMPORAL_ADDRESS, the payload key); the management API through
 * `kubeconfigFile`. With `webhookPort`, it also serves and registers the admission webhooks (defaulting and
 * validating) and the conversion webhook (v1beta1 served) on 127.0.0.1 (the apiserver must reach them there),
 * and is ready only once the apiserver calls both admission webhooks and serves v1beta1 through the other.
 */
export async function bridgeMain(opts: {
  kubeconfigFile: string;
  intervalMs: number;
  kubernetesVersions?: string[];
  webhookPort?: number;
  stop: Promise<void>;
}): Promise<void> {
  const kubeconfig = readFileSync(opts.kubeconfigFile, 'utf8');
  const api = new ManagementClient(kubeconfig);
  // Unique per process, so a second bridge on this host stands by rather than sharing the lease.
  const identity = `${hostname()}_${process.pid}_${randomBytes(3).toString('hex')}`;
  const lease = new BridgeLease(kubeconfig, { identity, durationSeconds: 15 });
  const client = await CaptClient.connect();
  const stopping = new AbortController();
  void opts.stop.then(() => stopping.abort());
  const log = logger.child({ component: 'bridge' });
  const cache = new ObjectCache(kubeconfig, api, Object.keys(managedResources) as ManagedKind[], log);
  let webhook: AdmissionWebhook | undefined;
  try {
    if (opts.webhookPort !== undefined) {
      const admission = new Admission({ api, client, log, kubernetesVersions: opts.kubernetesVersions });
      const registrar = await ManagementApi.fromKubeconfig(kubeconfig);
      try {
        // The conversion follows the schemas the apiserver serves, read from the CRDs themselves.
        const schemas = conversionSchemas((await convertedCrds(registrar)) as unknown as Json[]);
        webhook = await startAdmissionWebhook({
          host: '127.0.0.1',
          port: opts.webhookPort,
          routes: {
            [validatePath]: validatingRoute((request) => admission.refusal(request), log),
            [mutatePath]: defaultingRoute(log),
            [conversionPath]: conversionRoute(schemas),
          },
          log,
        });
        await registerAdmissionWebhook(registrar, webhook);
        const conversionUrl = new URL(conversionPath, webhook.url).href;
        const converted = await registerConversionWebhook(registrar, conversionUrl, webhook.caBundle);
        log.info({ url: conversionUrl, crds: converted.length }, 'conversion webhook registered: v1beta1 served');
      } finally {
        registrar.close();
      }
    }
    log.info(
      { kubeconfig: opts.kubeconfigFile, intervalMs: opts.intervalMs, identity, webhook: webhook?.url },
      'capt bridge ready',
    );
    await cache.start();
    await new Bridge({ api, client, log, lease, cache, kubernetesVersions: opts.kubernetesVersions }).run(
      opts.intervalMs,
      stopping.signal,
    );
  } finally {
    await cache.stop();
    await webhook?.close();
    await client.close();
  }
}
