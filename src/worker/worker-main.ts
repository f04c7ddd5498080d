import { NativeConnection, Runtime } from '@temporalio/worker';
import { captDataConverter } from '../codec/data-converter';
import { temporalAddress, temporalNamespace, temporalTLS } from '../config/temporal-connection';
import { logger, temporalLogger } from './logging';
import { createWorkers, runWorkers } from './start-workers';
import { workerServes } from './worker-serves';

/**
 * A capt worker process: `capt worker` and the embedded stack run this. Configured by environment:
 * TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and TLS as src/config/temporal-connection reads them, and
 * CAPT_WORKFLOW_BUNDLE, a prebuilt workflow bundle to skip bundling at start, and CAPT_WORKER_SERVES, which
 * queues it serves (see worker-serves.ts). The payload keys come from CAPT_CODEC_KEYS or the key file
 * (src/codec/codec-keys.ts); without one it refuses to start.
 */
export async function workerMain(): Promise<void> {
  const serves = workerServes(process.env.CAPT_WORKER_SERVES);
  Runtime.install({ logger: temporalLogger });
  // Before connecting: without a payload key the worker could read nothing, so it does not start.
  const dataConverter = captDataConverter();
  const connection = await NativeConnection.connect({ address: temporalAddress(), tls: temporalTLS() });
  const bundle = process.env.CAPT_WORKFLOW_BUNDLE;
  const workers = await createWorkers({ connection, namespace: temporalNamespace(), dataConverter, ...serves, ...(bundle ? { workflowBundle: { codePath: bundle } } : {}) });
  logger.info({ address: temporalAddress(), namespace: temporalNamespace(), ...serves }, 'capt worker ready');
  process.stdout.write('capt worker ready\n');
  try {
    await runWorkers(workers);
  } finally {
    await connection.close();
  }
}

if (require.main === module) {
  workerMain().catch((err) => {
    logger.error({ err }, 'capt worker failed');
    process.exitCode = 1;
  });
}
