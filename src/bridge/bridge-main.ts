import { readFileSync } from 'node:fs';
import { CaptClient } from '../client/capt-client';
import { logger } from '../worker/logging';
import { Bridge } from './bridge';
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
  const api = new ManagementClient(readFileSync(opts.kubeconfigFile, 'utf8'));
  const client = await CaptClient.connect();
  const stopping = new AbortController();
  void opts.stop.then(() => stopping.abort());
  const log = logger.child({ component: 'bridge' });
  log.info({ kubeconfig: opts.kubeconfigFile, intervalMs: opts.intervalMs }, 'capt bridge ready');
  try {
    await new Bridge({ api, client, log, kubernetesVersions: opts.kubernetesVersions }).run(
      opts.intervalMs,
      stopping.signal,
    );
  } finally {
    await client.close();
  }
}
