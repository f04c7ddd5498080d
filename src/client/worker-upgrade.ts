import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { machineReportSignal } from '../contract/cluster-messages';
import { MachinePhase, type MachineReport } from '../contract/machine';
import { deploymentVersionValue } from '../contract/worker-deployment';
import { describeCaptDeployment, routeToBuild, type CaptBuild, type CaptDeployment } from './worker-deployment';

/** The workflow kinds capt runs, as CaptKind names them; owners are the first three. */
const ownerKinds = ['Cluster', 'KubeadmControlPlane', 'MachineDeployment'] as const;
const workflowKinds = [...ownerKinds, 'Machine'] as const;

/** What still runs on one build: open workflows by kind and a few of their IDs. */
export interface BuildWorkflows extends CaptBuild {
  running: number;
  byKind: Record<string, number>;
  /** Up to five workflow IDs, for `temporal workflow describe`. */
  some: string[];
}

export interface WorkerBuilds {
  current?: string;
  ramping?: { buildId: string; percentage: number };
  builds: BuildWorkflows[];
}

export interface UpgradeReport {
  buildId: string;
  previous?: string;
  rampPercentage?: number;
  /** Owner workflows on the previous build told to look at their target build (they continue as new onto it). */
  wokenOwners: number;
  /** The previous build's open workflows: its workers may stop once there are none. */
  stillOnPrevious?: BuildWorkflows;
}

const runningOn = (buildId: string) =>
  `TemporalWorkerDeploymentVersion = '${deploymentVersionValue(buildId)}' AND ExecutionStatus = 'Running'`;

/** The open workflows of a build, through the visibility store (its own drainage status lags by minutes). */
async function buildWorkflows(client: Client, build: CaptBuild): Promise<BuildWorkflows> {
  const query = runningOn(build.buildId);
  const [total, ...counts] = await Promise.all(
    [query, ...workflowKinds.map((k) => `${query} AND CaptKind = '${k}'`)].map((q) => client.workflow.count(q)),
  );
  const some: string[] = [];
  for await (const w of client.workflow.list({ query, pageSize: 5 })) {
    some.push(w.workflowId);
    if (some.length === 5) break;
  }
  const byKind = Object.fromEntries(workflowKinds.map((k, i) => [k, counts[i]!.count]).filter(([, n]) => n));
  return { ...build, running: total.count, byKind, some };
}

/** `capt worker status`: each build of the capt deployment, its routing and what still runs on it. */
export async function workerBuilds(client: Client): Promise<WorkerBuilds> {
  const deployment = await describeCaptDeployment(client.workflowService, client.options.namespace);
  if (!deployment) return { builds: [] };
  return {
    current: deployment.current,
    ramping: deployment.ramping,
    builds: await Promise.all(deployment.builds.map((b) => buildWorkflows(client, b))),
  };
}

/** The newest build that is not current: the one an operator just started, when none is named. */
function newestOther(deployment: CaptDeployment | undefined): string {
  const others = (deployment?.builds ?? [])
    .filter((b) => b.buildId !== deployment?.current)
    .sort((a, b) => (a.createdAt ?? '').localeCompare(b.createdAt ?? ''));
  const newest = others.at(-1);
  if (!newest)
    throw new Error(
      `no capt build but the current one (${deployment?.current ?? 'none'}) has polled Temporal: start the new build's \`capt worker\` first`,
    );
  return newest.buildId;
}

/**
 * A report naming no machine: the owner records nothing (no record has that name) and plans once more. It
 * is there to give an owner waiting for messages a workflow task, at which it sees that its target build
 * changed and continues as new onto it.
 */
const wakeReport: MachineReport = {
  name: 'capt upgrade workers',
  phase: MachinePhase.Provisioning,
  marked: false,
  sequence: 0,
};

/**
 * `capt upgrade workers`: makes `buildId` (default: the newest build that is not current) the current
 * build, or ramps it to `rampPercentage`; then tells the previous build's owners, which continue as new
 * onto their target build, and reports what still runs on the previous build. Machine workflows started
 * there finish there. A build no worker polls is refused and nothing changes.
 */
export async function upgradeWorkers(
  client: Client,
  opts: { buildId?: string; rampPercentage?: number; waitMs: number },
): Promise<UpgradeReport> {
  const namespace = client.options.namespace;
  const before = await describeCaptDeployment(client.workflowService, namespace);
  const buildId = opts.buildId ?? newestOther(before);
  await routeToBuild(client.workflowService, namespace, buildId, {
    rampPercentage: opts.rampPercentage,
    waitMs: opts.waitMs,
    identity: `capt upgrade workers ${hostname()}:${process.pid}`,
  });
  const previous = before?.current && before.current !== buildId ? before.current : undefined;
  if (!previous) return { buildId, rampPercentage: opts.rampPercentage, wokenOwners: 0 };
  // Asked again a few times: an owner busy in a handler, or whose task started before the routing reached it, sees the change at a later task.
  const owners = `${runningOn(previous)} AND CaptKind IN (${ownerKinds.map((k) => `'${k}'`).join(', ')})`;
  const woken = new Set<string>();
  for (let round = 0; round < 3; round++) {
    if (round) await sleep(2000);
    for await (const w of client.workflow.list({ query: owners })) {
      // One that closed meanwhile has nothing to move.
      await client.workflow
        .getHandle(w.workflowId)
        .signal(machineReportSignal, wakeReport)
        .then(
          () => woken.add(w.workflowId),
          () => undefined,
        );
    }
  }
  const wokenOwners = woken.size;
  const summary = (await describeCaptDeployment(client.workflowService, namespace))?.builds.find(
    (b) => b.buildId === previous,
  ) ?? { buildId: previous, status: 'UNKNOWN' };
  return {
    buildId,
    previous,
    rampPercentage: opts.rampPercentage,
    wokenOwners,
    stillOnPrevious: await buildWorkflows(client, summary),
  };
}
