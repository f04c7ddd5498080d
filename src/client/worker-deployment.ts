import { setTimeout as sleep } from 'node:timers/promises';
import { temporal } from '@temporalio/proto';
import { captDeploymentName, deploymentVersionValue } from '../contract/worker-deployment';

/** Temporal's gRPC API, which the TypeScript SDK 1.24 has no deployment client for; both kinds of connection carry one. */
export type WorkflowService = temporal.api.workflowservice.v1.WorkflowService;

/** One build of capt that has polled: its routing status (CURRENT, RAMPING, DRAINING, DRAINED, INACTIVE) and drainage. */
export interface CaptBuild {
  buildId: string;
  status: string;
  /** DRAINING while pinned workflows still run on it, DRAINED once none do; Temporal refreshes it every few minutes. */
  drainage?: string;
  createdAt?: string;
}

export interface CaptDeployment {
  current?: string;
  ramping?: { buildId: string; percentage: number };
  builds: CaptBuild[];
  /** Guards a routing change against one made meanwhile. */
  conflictToken: Uint8Array;
  /** False while a routing change is still reaching the task queues (Temporal 1.31 and newer say so). */
  routingSettled: boolean;
}

const grpcNotFound = 5;
const grpcFailedPrecondition = 9;
const grpcCode = (err: unknown) => (err as { code?: number }).code;
const grpcDeadlineExceeded = 4;
const grpcUnavailable = 14;
/**
 * Refusals that registering pollers can lift (the deployment or version unknown yet, a task queue without pollers
 * yet), and a server too busy to answer in time, which the next ask may find free (a loaded dev server once took
 * 30 s over DescribeWorkerDeployment, and the starting worker gave up at once).
 */
const notReadyYet = (err: unknown) =>
  [grpcNotFound, grpcFailedPrecondition, grpcDeadlineExceeded, grpcUnavailable].includes(grpcCode(err) ?? -1);

/** `WORKER_DEPLOYMENT_VERSION_STATUS_CURRENT` reads `CURRENT`. */
function enumName(
  values: Record<string, string | number>,
  value: number | null | undefined,
  prefix: string,
): string | undefined {
  const name = value ? values[value] : undefined;
  return typeof name === 'string' ? name.replace(prefix, '') : undefined;
}

/** The `capt` deployment as Temporal routes it; undefined before any versioned capt worker has polled. */
export async function describeCaptDeployment(
  service: WorkflowService,
  namespace: string,
): Promise<CaptDeployment | undefined> {
  try {
    const { workerDeploymentInfo: info, conflictToken } = await service.describeWorkerDeployment({
      namespace,
      deploymentName: captDeploymentName,
    });
    const routing = info?.routingConfig;
    const ramping = routing?.rampingDeploymentVersion?.buildId;
    return {
      current: routing?.currentDeploymentVersion?.buildId || undefined,
      ramping: ramping ? { buildId: ramping, percentage: routing?.rampingVersionPercentage ?? 0 } : undefined,
      conflictToken: conflictToken ?? new Uint8Array(),
      routingSettled:
        info?.routingConfigUpdateState !==
        temporal.api.enums.v1.RoutingConfigUpdateState.ROUTING_CONFIG_UPDATE_STATE_IN_PROGRESS,
      builds: (info?.versionSummaries ?? []).map((s) => ({
        buildId: s.deploymentVersion?.buildId ?? '',
        status:
          enumName(
            temporal.api.enums.v1.WorkerDeploymentVersionStatus,
            s.status,
            'WORKER_DEPLOYMENT_VERSION_STATUS_',
          ) ?? 'UNSPECIFIED',
        drainage: enumName(
          temporal.api.enums.v1.VersionDrainageStatus,
          s.drainageInfo?.status ?? s.drainageStatus,
          'VERSION_DRAINAGE_STATUS_',
        ),
        createdAt: s.createTime?.seconds ? new Date(Number(s.createTime.seconds) * 1000).toISOString() : undefined,
      })),
    };
  } catch (err) {
    if (grpcCode(err) === grpcNotFound) return undefined;
    throw err;
  }
}

/** Asks `attempt` again while Temporal answers that pollers are not registered yet, until `waitMs` has passed. */
export async function untilRegistered<T>(waitMs: number, attempt: () => Promise<T>, what: () => string): Promise<T> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      return await attempt();
    } catch (err) {
      if (!notReadyYet(err) || Date.now() > deadline) {
        throw new Error(`${what()}: ${(err as Error).message}`, { cause: err });
      }
      await sleep(1000);
    }
  }
}

/**
 * Routes the deployment's new workflows (and owners at their next continue-as-new) to `buildId`: all of
 * them, or `rampPercentage` percent while the current build keeps the rest. The build's workers must poll
 * every queue the current build polls; until they do (for `waitMs`), Temporal refuses and nothing changes.
 */
export async function routeToBuild(
  service: WorkflowService,
  namespace: string,
  buildId: string,
  opts: { rampPercentage?: number; waitMs: number; identity: string },
): Promise<void> {
  const known = await untilRegistered(
    opts.waitMs,
    async () => {
      const deployment = await describeCaptDeployment(service, namespace);
      if (deployment?.builds.some((b) => b.buildId === buildId)) return deployment;
      const builds = deployment?.builds.map((b) => `${b.buildId} (${b.status})`).join(', ') || 'none';
      throw Object.assign(
        new Error(
          `no capt worker of build ${buildId} has polled Temporal (builds known: ${builds}); start \`capt worker\` of that build first, it prints its build id`,
        ),
        { code: grpcNotFound },
      );
    },
    () => `build ${buildId}`,
  );
  const request = { namespace, deploymentName: captDeploymentName, buildId, identity: opts.identity };
  await untilRegistered(
    opts.waitMs,
    async () => {
      const { conflictToken } = (await describeCaptDeployment(service, namespace)) ?? known;
      if (opts.rampPercentage === undefined)
        await service.setWorkerDeploymentCurrentVersion({ ...request, conflictToken });
      else
        await service.setWorkerDeploymentRampingVersion({ ...request, conflictToken, percentage: opts.rampPercentage });
    },
    () =>
      `build ${buildId} was not made ${opts.rampPercentage === undefined ? 'current' : `ramping at ${opts.rampPercentage}%`} (its workers must poll every task queue the current build polls)`,
  );
  // Until the task queues have the new routing, a workflow task would not yet tell an owner that its target build changed.
  for (
    const deadline = Date.now() + opts.waitMs;
    !(await describeCaptDeployment(service, namespace))?.routingSettled && Date.now() < deadline;
  )
    await sleep(250);
}

/**
 * A deployment without a current build routes new workflows to unversioned workers, of which capt has
 * none: nothing would run. So a worker whose deployment has none makes its own build current; a
 * deployment that has one is changed only by `capt upgrade workers`, or by `capt dev`, whose one worker
 * (`always`) takes over every run: see followCurrentBuild. Returns the build that is current afterwards.
 */
export async function adoptCurrentBuild(
  service: WorkflowService,
  namespace: string,
  buildId: string,
  opts: { always: boolean; waitMs: number; identity: string },
): Promise<string> {
  const current = await untilRegistered(
    opts.waitMs,
    async () => {
      const deployment = await describeCaptDeployment(service, namespace);
      // Not there until this worker's pollers have registered: asked again.
      if (!deployment)
        throw Object.assign(new Error(`the ${captDeploymentName} worker deployment is not registered yet`), {
          code: grpcNotFound,
        });
      if (deployment.current && (!opts.always || deployment.current === buildId)) return deployment.current;
      // The conflict token makes a second worker starting at the same moment read again instead of overriding the first.
      await service.setWorkerDeploymentCurrentVersion({
        namespace,
        deploymentName: captDeploymentName,
        buildId,
        identity: opts.identity,
        conflictToken: deployment.conflictToken,
      });
      return buildId;
    },
    () => `build ${buildId} could not be made current`,
  );
  if (opts.always) await followCurrentBuild(service, namespace, buildId, opts.identity);
  return current;
}

/**
 * `capt dev` runs one worker, so the runs of the builds before it have no worker left: they would wait
 * for good. They follow the current build from now on (an auto-upgrade override), as they did before
 * capt's workers were versioned; a workflow change that is not replay-safe then fails their tasks.
 */
async function followCurrentBuild(
  service: WorkflowService,
  namespace: string,
  buildId: string,
  identity: string,
): Promise<void> {
  const query = `TemporalWorkerDeployment = '${captDeploymentName}' AND TemporalWorkerDeploymentVersion != '${deploymentVersionValue(buildId)}' AND ExecutionStatus = 'Running'`;
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await service.listWorkflowExecutions({ namespace, query, pageSize: 100, nextPageToken });
    for (const w of page.executions ?? []) {
      await service
        .updateWorkflowExecutionOptions({
          namespace,
          identity,
          workflowExecution: { workflowId: w.execution?.workflowId },
          workflowExecutionOptions: { versioningOverride: { autoUpgrade: true } },
          updateMask: { paths: ['versioning_override'] },
        })
        .catch((err: unknown) => {
          // One that closed meanwhile needs nothing.
          if (grpcCode(err) !== grpcNotFound) throw err;
        });
    }
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
}
