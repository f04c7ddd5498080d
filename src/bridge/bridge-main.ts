import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { CaptClient } from '../client/capt-client';
import { logger } from '../worker/logging';
import { Bridge } from './bridge';
import { BridgeLease } from './bridge-lease';
import { ManagementClient } from './management-client';

/**
 * `capt bridge`: the management API's door to capt, in the foreground until `stop` resolves. Temporal is
 * reached as every capt client reaches it (TEMPORAL_ADDRESS, the payload key); the management API through
 * `kubeconfigFile`.
 */
export async function bridgeMain(opts: {
  kubeconfigFile: string;
  intervalMs: number;
  kubernetesVersions?: string[];
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
  log.info({ kubeconfig: opts.kubeconfigFile, intervalMs: opts.intervalMs, identity }, 'capt bridge ready');
  try {
    await new Bridge({ api, client, log, lease, kubernetesVersions: opts.kubernetesVersions }).run(
      opts.intervalMs,
      stopping.signal,
    );
  } finally {
    await client.close();
  }
}
