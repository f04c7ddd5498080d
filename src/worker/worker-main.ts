import { NativeConnection, Runtime } from '@temporalio/worker';
import { logger, temporalLogger } from './logging';
import { createWorkers, runWorkers } from './start-workers';

/**
 * A capt worker process: `capt worker` and the embedded stack run this. Configured by environment:
 * TEMPORAL_ADDRESS (default localhost:7233), TEMPORAL_NAMESPACE (default default), and
 * CAPT_WORKFLOW_BUNDLE, a prebuilt workflow bundle to skip bundling at start.
 */
export async function workerMain(): Promise<void> {
  Runtime.install({ logger: temporalLogger });
  const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS ?? 'localhost:7233' });
  const bundle = process.env.CAPT_WORKFLOW_BUNDLE;
  const workers = await createWorkers({ connection, namespace: process.env.TEMPORAL_NAMESPACE ?? 'default', ...(bundle ? { workflowBundle: { codePath: bundle } } : {}) });
  logger.info({ address: process.env.TEMPORAL_ADDRESS ?? 'localhost:7233' }, 'capt worker ready');
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
