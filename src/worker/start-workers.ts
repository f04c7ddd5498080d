import { readFile } from 'node:fs/promises';
import type { DataConverter } from '@temporalio/common';
import { NativeConnection, Worker, type WorkerDeploymentOptions, type WorkflowBundleOption } from '@temporalio/worker';
import * as coreActivities from '../../activities';
import { LocalProvider } from '../../providers/local/local-provider';
import { providerActivities } from '../../providers/provider-activities';
import type { InfrastructureProvider } from '../../providers/provider';
import { captDataConverter } from '../codec/data-converter';
import { coreTaskQueue, ownersTaskQueue, providerTaskQueue } from '../contract/task-queues';
import { captDeploymentName } from '../contract/worker-deployment';
import { bundleCaptWorkflows, buildIdOf } from './workflow-build';
import { defaultMaxCachedWorkflows } from './workflow-cache';

/** Every provider capt ships, by name. */
export const installedProviders = (): InfrastructureProvider[] => [new LocalProvider()];

export interface WorkerOptions {
  connection: NativeConnection;
  namespace?: string;
  /** A prebuilt workflow bundle (tests share one); otherwise workflows/ is bundled at start. */
  workflowBundle?: WorkflowBundleOption;
  /** Which task queues this process serves: the core queue and/or providers by name. */
  core?: boolean;
  providers?: string[];
  /** Default: captDataConverter(), which refuses to start without a payload key. */
  dataConverter?: DataConverter;
  /** Workflow runs each workflow queue's worker keeps cached (workflow-cache.ts); default capt's. */
  maxCachedWorkflows?: number;
}

/**
 * Activities one worker runs at once. Most of capt's are long, heartbeating waits (a bootstrap, a Node,
 * a drain) that cost little while they wait; the SDK's default of 100 would queue the machines of a
 * large scale-up behind each other's waits.
 */
const maxConcurrentActivityTaskExecutions = 400;

/**
 * Workflow tasks one workflow queue's worker has open at once (the SDK's default is 40), and local activities it runs
 * at once (the SDK's 100). A machine's task stays open while its report reaches the owner (a local activity, a second
 * or two under load), so most of these slots wait rather than work: at 10 x 1,000 the 40 were all held by such waits
 * and the worker stopped polling (bench/README, "What stalls it").
 */
export const maxConcurrentWorkflowTasks = 200;

/** The workers of one process, all of one build. */
export interface CaptWorkers {
  workers: Worker[];
  buildId: string;
}

/** The code of a bundle given either way. */
const bundleCode = async (bundle: WorkflowBundleOption) =>
  'code' in bundle ? bundle.code : await readFile(bundle.codePath, 'utf8');

/**
 * Creates capt's workers: `capt-core` (machine workflows and provider-independent activities), `capt-owners`
 * (cluster, control-plane and MachineDeployment workflows, with the same activities), and one per provider.
 * All are one version of the `capt` worker deployment, named by the workflow bundle (a provider-only process
 * bundles too, for the name): Temporal keeps a pinned workflow on the build it started on, so workers of
 * a new build and of the old one can run side by side (see `capt upgrade workers`).
 */
export async function createWorkers(opts: WorkerOptions): Promise<CaptWorkers> {
  const workers: Worker[] = [];
  const namespace = opts.namespace ?? 'default';
  const dataConverter = opts.dataConverter ?? captDataConverter();
  const workflowBundle = opts.workflowBundle ?? (await bundleCaptWorkflows());
  const buildId = buildIdOf(await bundleCode(workflowBundle));
  // Workflow types without options of their own are pinned too: a run finishes on the code it started on.
  const workerDeploymentOptions: WorkerDeploymentOptions = {
    version: { deploymentName: captDeploymentName, buildId },
    useWorkerVersioning: true,
    defaultVersioningBehavior: 'PINNED',
  };
  const common = {
    connection: opts.connection,
    namespace,
    maxConcurrentActivityTaskExecutions,
    dataConverter,
    workerDeploymentOptions,
  };
  const cached = opts.maxCachedWorkflows ?? defaultMaxCachedWorkflows;
  if (opts.core ?? true) {
    // One bundle for both queues: each worker serves every workflow type, so runs started before the split still find theirs.
    for (const taskQueue of [coreTaskQueue, ownersTaskQueue])
      workers.push(
        await Worker.create({
          ...common,
          taskQueue,
          activities: coreActivities,
          workflowBundle,
          maxCachedWorkflows: cached,
          // The SDK allows no more open tasks than cached runs. Each open task may wait on one report.
          maxConcurrentWorkflowTaskExecutions: Math.min(maxConcurrentWorkflowTasks, cached),
          maxConcurrentLocalActivityExecutions: maxConcurrentWorkflowTasks,
        }),
      );
  }
  const wanted = opts.providers ?? installedProviders().map((p) => p.name);
  for (const provider of installedProviders().filter((p) => wanted.includes(p.name))) {
    workers.push(
      await Worker.create({
        ...common,
        taskQueue: providerTaskQueue(provider.name),
        activities: providerActivities(provider, coreActivities.createBootstrapData),
      }),
    );
  }
  return { workers, buildId };
}

/** Runs the workers until all have stopped; when one fails, the others are shut down too. */
export async function runWorkers(workers: Worker[]): Promise<void> {
  const runs = workers.map((w) =>
    w.run().catch((err: unknown) => {
      for (const other of workers) if (other.getState() === 'RUNNING') other.shutdown();
      throw err;
    }),
  );
  const results = await Promise.allSettled(runs);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
}
