import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { CaptClient } from '../client/capt-client';
import { logger } from '../worker/logging';
import { Admission } from './admission';
import type { AdmissionWebhook } from './admission-webhook';
import { Bridge } from './bridge';
import { serveWebhooks, type WebhookServing } from './bridge-webhooks';
import { BridgeLease } from './bridge-lease';
import { ManagementClient, managedResources, type ManagedKind } from './management-client';
import { ObjectCache } from './object-cache';

/**
 * `capt bridge`: the management API's door to capt, in the foreground until `stop` resolves. Temporal is
 * reached as every capt client reaches it (TEMPORAL_ADDRESS, the payload key); the management API through
 * `kubeconfigFile`. With `webhooks`, it also serves the admission webhooks (defaulting and validating) and the
 * conversion webhook (v1beta1 served), registering them itself or as `capt init` did (bridge-webhooks.ts), and
 * is ready only once the apiserver calls them.
 */
export async function bridgeMain(opts: {
  kubeconfigFile: string;
  intervalMs: number;
  kubernetesVersions?: string[];
  webhooks?: WebhookServing;
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
    if (opts.webhooks) {
      const admission = new Admission({ api, client, log, kubernetesVersions: opts.kubernetesVersions });
      webhook = await serveWebhooks({ kubeconfig, serving: opts.webhooks, admission, log });
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
