import { hostname } from 'node:os';
import { NativeConnection, Runtime } from '@temporalio/worker';
import { adoptCurrentBuild } from '../client/worker-deployment';
import { captDataConverter } from '../codec/data-converter';
import { temporalAddress, temporalNamespace, temporalTLS } from '../config/temporal-connection';
import { logger, temporalLogger } from './logging';
import { createWorkers, runWorkers } from './start-workers';
import { endAfterStopGrace } from './stop-grace';
import { workerServes } from './worker-serves';
import { metricsTelemetry } from './worker-metrics';
import { maxCachedWorkflows } from './workflow-cache';
import { FleetGauges, fleetGaugeSeconds } from './fleet-gauges';
import { removeOrphanScratch } from '../pki/scratch';

/**
 * A capt worker process: `capt worker` and the embedded stack run this. Configured by environment:
 * TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and TLS as src/config/temporal-connection reads them, and
 * CAPT_WORKFLOW_BUNDLE, a prebuilt workflow bundle to skip bundling at start, and CAPT_WORKER_SERVES, which
 * queues it serves (see worker-serves.ts), and CAPT_WORKER_MAKE_CURRENT=1 (`capt dev`), which makes this
 * build the current one even when the deployment has another, and CAPT_METRICS_ADDRESS, where it serves Prometheus
 * metrics (worker-metrics.ts) with the fleet's gauges every CAPT_FLEET_GAUGES_SECONDS (fleet-gauges.ts), and CAPT_MAX_CACHED_WORKFLOWS, its workflow cache's bound (workflow-cache.ts). The payload keys come from CAPT_CODEC_KEYS
 * or the key file (src/codec/codec-keys.ts); without one it refuses to start.
 */
export async function workerMain(): Promise<void> {
  const serves = workerServes(process.env.CAPT_WORKER_SERVES);
  const telemetryOptions = metricsTelemetry(process.env.CAPT_METRICS_ADDRESS);
  const cached = maxCachedWorkflows(process.env.CAPT_MAX_CACHED_WORKFLOWS);
  const gaugeSeconds = fleetGaugeSeconds(process.env.CAPT_FLEET_GAUGES_SECONDS);
  Runtime.install({ logger: temporalLogger, ...(telemetryOptions ? { telemetryOptions } : {}) });
  endAfterStopGrace(logger);
  // Before connecting: without a payload key the worker could read nothing, so it does not start.
  const dataConverter = captDataConverter();
  const orphans = await removeOrphanScratch();
  if (orphans) logger.info({ orphans }, 'removed signing scratch folders left by processes killed mid-signing');
  const connection = await NativeConnection.connect({ address: temporalAddress(), tls: temporalTLS() });
  const bundle = process.env.CAPT_WORKFLOW_BUNDLE;
  const { workers, buildId } = await createWorkers({
    connection,
    namespace: temporalNamespace(),
    dataConverter,
    maxCachedWorkflows: cached,
    ...serves,
    ...(bundle ? { workflowBundle: { codePath: bundle } } : {}),
  });
  const running = runWorkers(workers);
  // With metrics, the fleet's gauges too (fleet-gauges.ts), counted until the workers stop.
  const gauges =
    telemetryOptions &&
    new FleetGauges(connection, temporalNamespace(), Runtime.instance().metricMeter).run(gaugeSeconds, running, (err) =>
      logger.warn({ err }, 'fleet gauges: a count failed; counting again at the next interval'),
    );
  try {
    // The deployment learns of this build when its pollers register, so the routing is set while they run.
    const current = await Promise.race([
      adoptCurrentBuild(connection.workflowService, temporalNamespace(), buildId, {
        always: process.env.CAPT_WORKER_MAKE_CURRENT === '1',
        waitMs: 60_000,
        identity: `capt worker ${hostname()}:${process.pid}`,
      }),
      running.then(() => Promise.reject(new Error('the workers stopped before the build was registered'))),
    ]);
    logger.info(
      {
        address: temporalAddress(),
        namespace: temporalNamespace(),
        ...serves,
        buildId,
        currentBuild: current,
        maxCachedWorkflows: cached,
        ...(process.env.CAPT_METRICS_ADDRESS ? { metrics: `http://${process.env.CAPT_METRICS_ADDRESS}/metrics` } : {}),
      },
      'capt worker ready',
    );
    const routing =
      current === buildId
        ? 'the current build'
        : `not current: new workflows run on ${current}; \`capt upgrade workers ${buildId}\` makes it current`;
    process.stdout.write(`capt worker ready: build ${buildId} (${routing})\n`);
    await running;
  } finally {
    for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
    await running.catch(() => undefined);
    await gauges;
    await connection.close();
  }
}

if (require.main === module) {
  workerMain().catch((err) => {
    logger.error({ err }, 'capt worker failed');
    process.exitCode = 1;
  });
}
