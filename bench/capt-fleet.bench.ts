import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import type { Client } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { bootstrapReportPath, clusterDir, localRoot, machineDir, machinesDir } from '../providers/local/layout';
import { loadManifests } from '../src/api/load-manifests';
import type { ClusterModel } from '../src/api/model';
import { CaptClient } from '../src/client/capt-client';
import type { ClusterStatus } from '../src/contract/cluster';
import { CaptCluster } from '../src/contract/search-attributes';
import { clusterWorkflowId, machineWorkflowId } from '../src/contract/workflow-ids';
import { postgresProcess } from '../src/dev/postgres-server';
import { frontendProxyProcess, temporalNodeProcess } from '../src/dev/postgres-topology';
import { runningPid } from '../src/util/processes';
import { measureHistories } from '../test/fixtures/history-guard';
import { processesMentioning } from '../test/fixtures/leaks';
import { runCaptOk } from '../test/fixtures/capt-cli';
import { MachineHarness } from '../test/fixtures/machine-harness';
import { startTemporalCluster, type PostgresTemporal } from '../test/fixtures/temporal';
import { resultHeader, runBenchmark, writeResult } from './bench-result';
import { busyShare, hostCpuTicks, memAvailableMiB } from './host-usage';
import { stopOnSignal } from './stop-on-signal';
import { workerPolling } from './worker-polling';
import { cpuSecondsOf, processesByPart, pssMiB, rssMiB, withDescendants } from './process-usage';

/**
 * A fleet: N clusters of 1 control plane + W workers applied at once, every MachineDeployment rolled out at once
 * (`capt rollout restart`, maxSurge 10%), then every cluster deleted. Each control plane is a real etcd, apiserver,
 * controller-manager and scheduler (about half a GiB).
 *   node dist/bench/capt-fleet.bench.js N [--workers W] [--temporal-nodes T] [--rollout-minutes M] [--idle-seconds S]
 * W defaults to 2. With `--temporal-nodes T` Temporal is the production topology (PostgreSQL, T server processes
 * behind the frontend proxy) instead of the dev server. Writes bench/results/capt-fleet-N.json, or
 * capt-fleet-N-x-W[-temporal-T].json when W or T is given; a run that stops short writes it too, with `stopped`.
 * With `--rollout-minutes M` a rollout not done after M minutes is measured as far as it got (machines replaced,
 * per cluster) and the fleet is deleted mid-rollout: a fleet whose rollout outlasts the session still shows its pace.
 * Between create and rollout the fleet stands idle for S seconds (120 by default): what each part costs while nothing
 * changes, per thousand Nodes, says how many Nodes the host can hold at all.
 */
const args = process.argv.slice(2);
function option(name: string): number | undefined {
  const i = args.indexOf(name);
  if (i < 0) return undefined;
  const value = Number(args[i + 1]);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} ${args[i + 1]}: give a whole number from 1`);
  return value;
}
const count = Number(args.find((a) => /^\d+$/.test(a)) ?? 20);
const workers = option('--workers') ?? 2;
const temporalNodes = option('--temporal-nodes');
const rolloutMinutes = option('--rollout-minutes');
const idleSeconds = option('--idle-seconds') ?? 120;
const resultName =
  args.includes('--workers') || temporalNodes
    ? `capt-fleet-${count}-x-${workers}${temporalNodes ? `-temporal-${temporalNodes}` : ''}`
    : `capt-fleet-${count}`;
const root = join(__dirname, '../..');
const E = proto.api.enums.v1.EventType;

const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil((p / 100) * values.length) - 1)]!;
const ms = (t: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
  Number(t?.seconds ?? 0) * 1000 + (t?.nanos ?? 0) / 1e6;
const round = (n: number, digits = 4) => Number(n.toFixed(digits));

/** The processes of each part of the stack, found in one pass over /proc (clusters come and go). */
async function processGroups(workerPid: number, topology?: PostgresTemporal): Promise<Record<string, number[]>> {
  const recorded = async (name: string) => (topology ? await runningPid(topology.stateDir, name) : undefined);
  const servers = [await recorded(frontendProxyProcess)];
  for (let node = 1; node <= (temporalNodes ?? 0); node++) servers.push(await recorded(temporalNodeProcess(node)));
  const postgres = await recorded(postgresProcess);
  return {
    worker: [workerPid],
    ...(await processesByPart()),
    // On the production topology Temporal is the recorded server processes, not a dev server.
    ...(topology ? { temporal: servers.filter((pid): pid is number => pid !== undefined) } : {}),
    postgres: postgres ? await withDescendants(postgres) : [],
  };
}

/** CPU seconds so far per part; PostgreSQL's include its ended backends, the launchers' the machines' processes. */
async function cpuByPart(groups: Record<string, number[]>): Promise<Record<string, number>> {
  const parts: Record<string, number> = {};
  for (const [part, pids] of Object.entries(groups)) parts[part] = await cpuSecondsOf(pids);
  parts.postgres! += await cpuSecondsOf(groups.postgres!.slice(0, 1), true);
  parts.machineProcesses = await cpuSecondsOf(groups.processLauncher!, true);
  return parts;
}

/** Below this much memory available the run stops itself and says so, before the kernel's OOM killer picks a process. */
const memoryFloorMiB = 1024;

/**
 * Peak memory per part, sampled every 5 s, its processes looked up again every minute: resident memory, but for
 * PostgreSQL proportional memory (each backend maps the shared buffers, which RSS would count in every one). Reading
 * /proc/<pid>/smaps_rollup of every process every 2 s cost the first attempt a third of a core. Also the least memory
 * the host had available.
 */
function memoryWatcher(groupsNow: () => Promise<Record<string, number[]>>) {
  const peaks: Record<string, number> = {};
  let lowestAvailableMiB = Infinity;
  let running = true;
  const done = (async () => {
    let groups = await groupsNow();
    for (let tick = 1; running; tick++) {
      let total = 0;
      for (const [part, pids] of Object.entries(groups)) {
        const mib = await (part === 'postgres' ? pssMiB(pids) : rssMiB(pids));
        total += mib;
        peaks[part] = Math.max(peaks[part] ?? 0, mib);
      }
      peaks.allParts = Math.max(peaks.allParts ?? 0, total);
      lowestAvailableMiB = Math.min(lowestAvailableMiB, await memAvailableMiB());
      await sleep(5000);
      if (tick % 12 === 0) groups = await groupsNow();
    }
  })();
  return {
    stop: async () => {
      running = false;
      await done;
      return peaks;
    },
    peaks: () => ({ ...peaks }),
    lowestAvailableMiB: () => lowestAvailableMiB,
  };
}

/** Each part's CPU seconds between two readings, divided by `n`: per machine, or per second (cores used). */
const perPart = (before: Record<string, number>, after: Record<string, number>, n: number, digits = 4) =>
  Object.fromEntries(Object.keys(after).map((k) => [k, round((after[k]! - (before[k] ?? 0)) / n, digits)]));
const per = (before: Record<string, number>, after: Record<string, number>, machines: number) =>
  perPart(before, after, machines);
const coresUsed = (before: Record<string, number>, after: Record<string, number>, ms: number) =>
  perPart(before, after, ms / 1000, 3);

/** Where each cluster's current step stood when last looked at: what a run that stopped short records. */
type Progress = Record<
  string,
  { step: string; seconds: number; done: boolean; machinesOnHost?: number; updatedWorkers?: number; at?: string }
>;

/**
 * The cluster's workers ready on its MachineDeployment's current template (undefined if it does not answer): its
 * newest MachineSet's ready machines (updatedReplicas counts the ones still provisioning too, as Cluster API's).
 */
const readyOnNewestSet = (client: CaptClient, name: string) =>
  client
    .ownerStatus('machinedeployment', 'default', `${name}-md-0`)
    .then((s) => s.machineSets?.at(-1)?.ready)
    .catch(() => undefined);

/**
 * How long one step may take before the run is called stuck: an hour, or a second per machine of the fleet when
 * that is longer (10 x 1,000 rolls out in about an hour on 2 cores).
 */
const stepLimitMs = Math.max(3_600_000, count * workers * 1000);

/**
 * Waits until `done` holds for the cluster's summary; returns seconds since `since`, or undefined once `shortAfterMs`
 * has passed (without it, passing the step's limit fails the run). Logs and records its progress (the machines on the
 * host and the workers updated every minute); stops the run when the host's memory runs low.
 */
async function settle(
  client: CaptClient,
  name: string,
  since: number,
  what: string,
  done: (s: ClusterStatus) => boolean,
  watch: { progress: Progress; lowestAvailableMiB: () => number; runOver: () => boolean },
  shortAfterMs?: number,
): Promise<number | undefined> {
  let lastLog = Date.now();
  for (const deadline = since + (shortAfterMs ?? stepLimitMs); ; await sleep(5000)) {
    // Another cluster's failure ended the run: this one's wait ends too, or the process would never exit.
    if (watch.runOver()) throw new Error(`${name}: ${what}: the run stopped`);
    const s = await client.clusterSummary('default', name).catch(() => undefined);
    const seconds = Math.round((Date.now() - since) / 1000);
    if (s && done(s)) {
      watch.progress[name] = { step: what, seconds, done: true };
      return (Date.now() - since) / 1000;
    }
    const md = s?.machineDeployments[0];
    if (s?.phase === 'Failed' || (md?.failedMachines ?? 0) > 0) throw new Error(`${name}: ${what} failed: ${s?.step}`);
    if (Date.now() > deadline && shortAfterMs !== undefined) return undefined;
    if (Date.now() > deadline)
      throw new Error(`${name}: ${what} did not finish within ${stepLimitMs / 60_000} min: ${s?.step}`);
    if (watch.lowestAvailableMiB() < memoryFloorMiB)
      throw new Error(
        `memory ran out: ${watch.lowestAvailableMiB()} MiB available (the run stops below ${memoryFloorMiB})`,
      );
    const last = watch.progress[name]?.step === what ? watch.progress[name] : undefined;
    watch.progress[name] = { ...last, step: what, seconds, done: false, at: s?.step };
    if (Date.now() - lastLog > 60_000) {
      lastLog = Date.now();
      const onHost = (await readdir(machinesDir(clusterDir('default', name))).catch(() => [])).length;
      const updated = await readyOnNewestSet(client, name);
      Object.assign(watch.progress[name]!, { machinesOnHost: onHost, updatedWorkers: updated });
      console.log(`${name} ${what}: ${seconds} s, ${onHost} machines on the host, ${updated} workers updated`);
    }
  }
}

/** Every worker on the newest revision (past `revision`), Running, and none beyond them. */
const workersSettled = (revision: number) => (s: ClusterStatus) => {
  const md = s.machineDeployments[0];
  return (
    s.phase === 'Provisioned' &&
    md !== undefined &&
    md.revision > revision &&
    md.ready &&
    md.rolloutComplete &&
    md.replicas === workers
  );
};

async function main(): Promise<void> {
  let topology: PostgresTemporal | undefined;
  const h = new MachineHarness(undefined, {
    guard: false,
    // The worker's metrics say whether it polls and has free slots when machines wait; gauges as often as in production.
    metrics: true,
    workerEnv: { CAPT_FLEET_GAUGES_SECONDS: '30' },
    ...(temporalNodes ? { temporal: async () => (topology = await startTemporalCluster(temporalNodes)).env } : {}),
  });
  await h.start();
  const client = await CaptClient.connect({ address: h.env.address });
  const groups = () => processGroups(h.worker!.pid, topology);
  // 1000 nodes need more /24 node ranges than the quickstart's /16 pod network holds; surge 10% as at scale.
  const text = (await readFile(join(root, 'examples/quickstart.yaml'), 'utf8')).replace(
    'maxSurge: 1',
    "maxSurge: '10%'",
  );
  const names = Array.from({ length: count }, (_, i) => `fleet-${i}`);
  const machines = count * workers;
  const result: Record<string, unknown> = {
    ...resultHeader(),
    clusters: count,
    workersPerCluster: workers,
    temporal: temporalNodes
      ? `production topology: ${temporalNodes} server processes on one PostgreSQL, behind the frontend proxy`
      : 'dev server',
  };
  const memory = memoryWatcher(groups);
  const progress: Progress = {};
  let step = 'start';
  let finished = false;
  const watch = { progress, lowestAvailableMiB: memory.lowestAvailableMiB, runOver: () => finished };
  const mark = async () => ({ at: Date.now(), host: await hostCpuTicks(), parts: await cpuByPart(await groups()) });
  let stepStarted = await mark();
  const begin = async (next: string) => {
    step = next;
    stepStarted = await mark();
  };
  const busySinceStepBegan = async () => busyShare(stepStarted.host, await hostCpuTicks());
  // A run that stops short (a step failed or ran out of time, memory ran low, or it was interrupted) still records
  // how far each cluster got and what the host had left: that is what ran out first.
  const recordStop = async (reason: string) => {
    if (finished) return;
    finished = true;
    Object.assign(result, {
      machines,
      stopped: {
        during: step,
        reason,
        afterSeconds: Math.round((Date.now() - stepStarted.at) / 1000),
        hostCpuBusy: await busySinceStepBegan(),
        coresByPart: coresUsed(stepStarted.parts, await cpuByPart(await groups()), Date.now() - stepStarted.at),
        lowestAvailableMiB: memory.lowestAvailableMiB(),
        worker: await workerPolling(h.metricsUrl!),
        failedMachines: await failedMachines(h.env.client),
        progress,
      },
      peakMemoryMiB: memory.peaks(),
    });
    await writeResult(resultName, result);
  };
  const pollingLog = setInterval(
    () => void workerPolling(h.metricsUrl!).then((w) => console.log(`worker: ${JSON.stringify(w)}`)),
    60_000,
  );
  const { stop, letGo } = stopOnSignal("capt's stack and the fleet's machines", async () => {
    await recordStop('interrupted');
    await memory.stop();
    await client.close();
    await h.stop();
  });
  try {
    await begin('create');
    const cpuStart = stepStarted.parts;
    const started = Date.now();
    const perCluster = await Promise.all(
      names.map(async (name) => {
        const [model] = loadManifests([{ file: 'quickstart.yaml', text }], {
          CLUSTER_NAME: name,
          CONTROL_PLANE_MACHINE_COUNT: '1',
          WORKER_MACHINE_COUNT: String(workers),
          POD_CIDR: '10.128.0.0/12',
        }) as [ClusterModel];
        const applied = Date.now();
        await client.apply([model]);
        return (await settle(client, name, applied, 'create', workersSettled(0), watch))!;
      }),
    );
    const allRunning = (Date.now() - started) / 1000;
    const cpuCreate = await cpuByPart(await groups());
    console.log(`create: ${machines} workers in ${count} clusters Running in ${allRunning} s`);
    // Apply -> first activity started, read from each cluster workflow's history.
    const latencies: number[] = [];
    for (const name of names) {
      const history = await h.env.client.workflow.getHandle(clusterWorkflowId('default', name)).fetchHistory();
      const start = history.events!.find((e) => e.eventType === E.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED)!;
      const firstActivity = history.events!.find((e) => e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_STARTED)!;
      latencies.push(ms(firstActivity.eventTime) - ms(start.eventTime));
    }
    // Each step's figures are recorded as it ends, so a run that stops later keeps them.
    const seconds: Record<string, number> = {
      allRunning,
      clusterP50: percentile(perCluster, 50),
      clusterP95: percentile(perCluster, 95),
    };
    const perSecond: Record<string, number> = { create: round(machines / allRunning, 2) };
    const cpuPerMachine: Record<string, Record<string, number>> = { created: per(cpuStart, cpuCreate, machines) };
    const busy: Record<string, number> = { create: await busySinceStepBegan() };
    const cores: Record<string, Record<string, number>> = {
      create: coresUsed(cpuStart, cpuCreate, allRunning * 1000),
    };
    Object.assign(result, {
      machines,
      seconds,
      machinesPerSecond: perSecond,
      hostCpuBusy: busy,
      coresByPart: cores,
      applyToFirstActivityMs: { p50: percentile(latencies, 50), p95: percentile(latencies, 95) },
      cpuSecondsPerMachine: cpuPerMachine,
    });

    await begin('idle');
    await sleep(idleSeconds * 1000);
    const cpuIdle = await cpuByPart(await groups());
    cores.idle = coresUsed(cpuCreate, cpuIdle, idleSeconds * 1000);
    busy.idle = await busySinceStepBegan();
    // Every cluster's Nodes: its control plane's and its workers'.
    result.idleCoresPerThousandNodes = perPart(cpuCreate, cpuIdle, (idleSeconds * count * (workers + 1)) / 1000, 3);
    console.log(`idle: ${JSON.stringify(cores.idle)}`);

    await begin('rollout');
    const rolloutStarted = Date.now();
    const perClusterRollout = await Promise.all(
      names.map(async (name) => {
        const asked = Date.now();
        const before = (await client.clusterSummary('default', name)).machineDeployments[0]!.revision;
        await runCaptOk({ TEMPORAL_ADDRESS: h.env.address }, 'rollout', 'restart', `machinedeployment/${name}-md-0`);
        const shortAfterMs = rolloutMinutes && rolloutStarted + rolloutMinutes * 60_000 - asked;
        return settle(client, name, asked, 'rollout', workersSettled(before), watch, shortAfterMs);
      }),
    );
    const rollout = (Date.now() - rolloutStarted) / 1000;
    const cpuRollout = await cpuByPart(await groups());
    const finishedRollouts = perClusterRollout.filter((t): t is number => t !== undefined);
    // A rollout stopped short counts the workers it had replaced: Running on the new template.
    const replacedPerCluster = await Promise.all(
      names.map(async (name, i) =>
        perClusterRollout[i] !== undefined ? workers : await readyOnNewestSet(client, name),
      ),
    );
    const replaced = replacedPerCluster.reduce<number>((sum, n) => sum + (n ?? 0), 0);
    console.log(`rollout: ${replaced} of ${machines} workers replaced in ${rollout} s`);
    Object.assign(seconds, {
      rolloutAll: rollout,
      ...(finishedRollouts.length === count
        ? {
            rolloutClusterP50: percentile(finishedRollouts, 50),
            rolloutClusterP95: percentile(finishedRollouts, 95),
          }
        : {}),
    });
    if (finishedRollouts.length < count)
      result.rolloutStoppedShort = {
        afterMinutes: rolloutMinutes,
        replaced,
        clustersDone: finishedRollouts.length,
        replacedPerCluster: Object.fromEntries(names.map((name, i) => [name, replacedPerCluster[i] ?? null])),
      };
    perSecond.rollout = round(replaced / rollout, 2);
    cpuPerMachine.replaced = per(cpuIdle, cpuRollout, Math.max(1, replaced));
    busy.rollout = await busySinceStepBegan();
    cores.rollout = coresUsed(cpuIdle, cpuRollout, rollout * 1000);
    if (topology) result.postgresDataMiB = Math.round((await databaseSize(topology)) / 2 ** 20);

    await begin('delete');
    const deleteStarted = Date.now();
    await Promise.all(
      names.map(async (name) => {
        await client.deleteCluster('default', name);
        await client.waitForDeletion('default', name, () => undefined, stepLimitMs);
      }),
    );
    seconds.deleteAll = (Date.now() - deleteStarted) / 1000;
    busy.delete = await busySinceStepBegan();
    await begin('measure');
    const histories = await measureHistories(h.env.client);
    let machineRuns = 0;
    for await (const wf of h.env.client.workflow.list()) if (wf.workflowId.startsWith('machine/')) machineRuns++;
    Object.assign(result, {
      peakMemoryMiB: await memory.stop(),
      lowestAvailableMiB: memory.lowestAvailableMiB(),
      histories: {
        runs: histories.runs,
        maxEvents: histories.maxHistoryEvents,
        maxBytes: histories.maxHistoryBytes,
        largest: histories.largest,
        maxPayloadBytes: histories.maxPayloadBytes,
        failedWorkflowTasks: histories.failedWorkflowTasks.length,
        failedWorkflowTaskCauses: histories.failedWorkflowTasks.slice(0, 10),
      },
      actions: { total: histories.actions, machineRuns, perMachine: round(histories.actions / machineRuns, 2) },
      leftover: {
        clusterDirectories: (await readdir(join(localRoot(), 'default')).catch(() => [])).length,
        processes: (await processesMentioning([join(h.home, 'local')])).length,
      },
    });
    finished = true;
  } catch (err) {
    await recordStop(err instanceof Error ? err.message : String(err));
    throw err;
  } finally {
    clearInterval(pollingLog);
    await stop();
    letGo();
  }
  await writeResult(resultName, result);
}

/** Why the first few Failed machines failed: the last activity failure in each one's history. */
async function failedMachines(client: Client): Promise<{ machine: string; failure: string }[]> {
  const found: { machine: string; failure: string }[] = [];
  try {
    for await (const w of client.workflow.list({ query: "CaptKind = 'Machine' AND CaptPhase = 'Failed'" })) {
      const { events } = await client.workflow.getHandle(w.workflowId).fetchHistory();
      const failed = [...(events ?? [])].reverse().find((e) => e.activityTaskFailedEventAttributes);
      const failure = failed?.activityTaskFailedEventAttributes?.failure;
      // A failed bootstrap fails no activity: the machine's own report says which command failed, and how.
      const machine = w.workflowId.slice(machineWorkflowId('default', '').length);
      const cluster = w.typedSearchAttributes.get(CaptCluster) ?? '';
      const report = await readFile(
        bootstrapReportPath(machineDir(clusterDir('default', cluster), machine)),
        'utf8',
      ).catch(() => '');
      found.push({
        machine: w.workflowId,
        failure: failure ? `${failure.message} (${failure.cause?.message ?? ''})` : report.slice(0, 2000) || '?',
      });
      if (found.length === 3) break;
    }
  } catch (err) {
    found.push({ machine: '?', failure: `not read: ${(err as Error).message}` });
  }
  return found;
}

/** The bytes of PostgreSQL's data directory (both of Temporal's databases, its WAL included). */
async function databaseSize(topology: PostgresTemporal): Promise<number> {
  const state = JSON.parse(await readFile(join(topology.stateDir, 'topology.json'), 'utf8')) as {
    postgres: { home: string };
  };
  const { stdout } = await promisify(execFile)('du', ['-sb', join(state.postgres.home, 'data')]);
  return Number(stdout.split('\t')[0]);
}

runBenchmark(main);
