import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { clusterDir, machinesDir } from '../providers/local/layout';
import { loadManifests } from '../src/api/load-manifests';
import { substituteVariables } from '../src/api/variables';
import type { ClusterModel } from '../src/api/model';
import { CaptClient } from '../src/client/capt-client';
import { runCaptOk } from '../test/fixtures/capt-cli';
import { maxMachinesPerOwner } from '../src/spec-rules/owner-rules';
import { measureHistories } from '../test/fixtures/history-guard';
import { processesMentioning } from '../test/fixtures/leaks';
import { MachineHarness } from '../test/fixtures/machine-harness';
import { metricSum } from '../test/fixtures/worker-metrics';
import { resultHeader, runBenchmark, writeResult } from './bench-result';
import { captCounters, temporalMetricsUrl } from './capi/capt-counters';
import { countersBetween, fetchMetrics, parseMetrics, sumBy, type Counters } from './capi/step-counters';
import { ManagementApiDoor } from './management-api-door';
import { cpuSecondsOf, processesByPart, rssMiB } from './process-usage';
import { stopOnSignal } from './stop-on-signal';

/**
 * capt at scale, against the real stack (Temporal dev server, a capt worker process, the local provider):
 * one cluster of 1 control plane + a MachineDeployment scaled to N workers, rolled out at maxSurge 10%,
 * scaled to 0 and deleted. `node dist/bench/capt-scale.bench.js [N]` writes bench/results/capt-scale-<N>.json.
 * With `--management-api` the operations go through the management API (kubectl apply, scale, patch and
 * delete, a `capt bridge` carrying them to the workflows and writing every object's status back), and the
 * result, capt-scale-<N>-management-api.json, adds the status lag and the apiserver's requests per machine.
 * With `--max-cached-workflows B` the worker keeps at most B runs cached per workflow queue, and the result adds
 * what the cache did (hits, misses, forced evictions) and what replaying an evicted run cost.
 */
const args = process.argv.slice(2);
const workers = Number(args.find((a) => /^\d+$/.test(a)) ?? 1000);
const throughApi = args.includes('--management-api');
// `--max-cached-workflows N`: the worker's workflow cache bound (src/worker/workflow-cache.ts); the result then
// records the SDK's cache and replay figures, and is named capt-scale-<N>-cache-<bound>.json.
const cacheArg = args.indexOf('--max-cached-workflows');
const cacheBound = cacheArg >= 0 ? args[cacheArg + 1] : undefined;
const root = join(__dirname, '../..');
const MD = 'bench-md-0';

/**
 * Samples the worker's and the Temporal server's memory every second; peaks are kept. The server's pids
 * are looked up once: scanning every process's command line each second cost the bench 6 ms of CPU per machine.
 */
function memoryWatcher(workerPid: number, temporal: number[]) {
  const peaks = { workerMiB: 0, temporalMiB: 0 };
  let running = true;
  const done = (async () => {
    while (running) {
      peaks.workerMiB = Math.max(peaks.workerMiB, await rssMiB([workerPid]));
      peaks.temporalMiB = Math.max(peaks.temporalMiB, await rssMiB(temporal));
      await sleep(1000);
    }
  })();
  return {
    peaks,
    stop: async () => {
      running = false;
      await done;
      return peaks;
    },
  };
}

/** The operations go through the CLI, as an operator runs them. */
const capt = async (address: string, ...args: string[]) =>
  void (await runCaptOk({ TEMPORAL_ADDRESS: address }, ...args));

/**
 * CPU seconds (user + system) used so far by each part of the stack, read from /proc. `machineProcesses`
 * is what the launchers' children used once they ended (a worker machine's cloud-init and its sandbox),
 * which no running process shows.
 */
async function cpuSeconds(workerPid: number, door?: ManagementApiDoor): Promise<Record<string, number>> {
  const management: Partial<Record<string, number[]>> = door ? await door.pids() : {};
  const parts: Record<string, number[]> = {
    ...(management as Record<string, number[]>),
    worker: [workerPid],
    // The management API runs the same programs as the workload cluster: its own are counted apart.
    ...(await processesByPart(management.managementApi)),
    bench: [process.pid],
  };
  const own = Object.fromEntries(
    await Promise.all(Object.entries(parts).map(async ([k, pids]) => [k, await cpuSecondsOf(pids)] as const)),
  );
  return { ...own, machineProcesses: await cpuSecondsOf(parts.processLauncher!, true) };
}

/** CPU seconds per machine each part used between two snapshots. */
const perMachine = (before: Record<string, number>, after: Record<string, number>, machines: number) =>
  Object.fromEntries(
    Object.keys(after).map((k) => [k, Number(((after[k]! - (before[k] ?? 0)) / machines).toFixed(4))]),
  );

const providerMachines = async () =>
  (await readdir(machinesDir(clusterDir('default', 'bench'))).catch(() => [] as string[])).filter((d) =>
    d.startsWith(`${MD}-`),
  ).length;

/** A status read that failed (a busy worker answering late) is logged and tried again, for up to a minute. */
async function patiently<T>(read: () => Promise<T>): Promise<T> {
  for (const deadline = Date.now() + 60_000; ; await sleep(1000)) {
    try {
      return await read();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      console.log(`status read failed, trying again: ${(err as Error).message}`);
    }
  }
}

/**
 * Waits until the MachineDeployment has `replicas` machines, all Running on its newest revision; returns
 * seconds. It watches the cluster's small summary of the MachineDeployment, as `capt get clusters` does, and
 * reads the full status (every machine's record) only to confirm, and for a progress line every 10 s:
 * polling that twice a second would cost the stack more than the operation measured.
 */
async function settle(client: CaptClient, replicas: number, what: string, startedAt = Date.now()): Promise<number> {
  let lastLog = Date.now();
  for (;;) {
    const summary = (await patiently(() => client.clusterSummary('default', 'bench'))).machineDeployments.find(
      (m) => m.name === MD,
    );
    const logDue = Date.now() - lastLog > 10_000;
    if ((summary?.ready && summary.replicas === replicas) || logDue) {
      const s = await patiently(() => client.ownerStatus('machinedeployment', 'default', MD));
      if (s.rolloutComplete && s.machines.length === replicas && s.readyReplicas === replicas)
        return (Date.now() - startedAt) / 1000;
      if (s.failedMachines) throw new Error(`${what}: ${s.failedMachines} machines failed; ${s.step}`);
      if (logDue) {
        lastLog = Date.now();
        console.log(
          `${what}: ${Math.round((Date.now() - startedAt) / 1000)} s, ${s.readyReplicas}/${replicas} ready, ${s.updatedReplicas} updated, ${s.machines.length} machines; ${s.step.slice(0, 160)}`,
        );
      }
    }
    await sleep(500);
  }
}

/**
 * What the worker's workflow caches did over the whole run, from the SDK's metrics: hits and misses of a run kept
 * in memory, runs evicted to stay within the bound, and the replays a miss costs (a replay rebuilds the run from
 * its history before the new task runs), per machine lifecycle and each.
 */
async function workflowCacheFigures(url: string, machines: number) {
  const [hits, misses, evictions, replays, replaySeconds, size] = await Promise.all(
    [
      'temporal_sticky_cache_hit',
      'temporal_sticky_cache_miss',
      'temporal_sticky_cache_total_forced_eviction',
      'temporal_workflow_task_replay_latency_count',
      'temporal_workflow_task_replay_latency_sum',
      'temporal_sticky_cache_size',
    ].map((name) => metricSum(url, name)),
  );
  return {
    hits,
    misses,
    forcedEvictions: evictions,
    cachedAtEnd: size,
    replays,
    replaySecondsTotal: Number(replaySeconds!.toFixed(2)),
    replayMsEach: replays ? Number(((replaySeconds! / replays!) * 1000).toFixed(2)) : 0,
    replaysPerMachine: Number((replays! / machines).toFixed(2)),
  };
}

/**
 * Seconds the worker spent in workflow tasks so far, by workflow type (the SDK's execution latency, summed): beside a
 * step's wall time, how busy each kind kept its workflow thread, the owner's planning among them.
 */
async function workflowTaskSeconds(url: string): Promise<Record<string, number>> {
  const name = 'temporal_workflow_task_execution_latency_sum';
  return sumBy(parseMetrics(await fetchMetrics(url), [name]), name, (l) => l.workflow_type ?? 'unknown');
}

/** How the bench asks capt for each step: through its CLI, or through the management API with kubectl. */
interface Operations {
  apply(model: ClusterModel, text: string): Promise<void>;
  scale(replicas: number): Promise<void>;
  restart(): Promise<void>;
  deleteCluster(): Promise<void>;
}

const throughCli = (client: CaptClient, address: string): Operations => ({
  apply: async (model) => void (await client.apply([model])),
  scale: (replicas) => capt(address, 'scale', 'machinedeployment', MD, '--replicas', String(replicas)),
  restart: () => capt(address, 'rollout', 'restart', `machinedeployment/${MD}`),
  deleteCluster: () => capt(address, 'delete', 'cluster', 'bench', '--wait', '--timeout', '15m'),
});

const throughManagementApi = (door: ManagementApiDoor): Operations => ({
  apply: async (_, text) => {
    const file = join(door.dir, 'bench.yaml');
    await writeFile(file, text);
    await door.kubectl('apply', '-f', file);
    // The workflow starts at the bridge's next pass.
    await door.kubectl('wait', '--for=condition=Available', 'cluster/bench', '--timeout=600s');
  },
  scale: async (replicas) => void (await door.kubectl('scale', `machinedeployment/${MD}`, `--replicas=${replicas}`)),
  // What `clusterctl alpha rollout restart` writes.
  restart: async () =>
    void (await door.kubectl(
      'patch',
      `machinedeployment/${MD}`,
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { rollout: { after: new Date().toISOString() } } }),
    )),
  deleteCluster: async () => void (await door.kubectl('delete', 'cluster', 'bench', '--timeout=15m')),
});

type MachineDeploymentObject = {
  metadata: { generation: number };
  status?: { replicas?: number; readyReplicas?: number; upToDateReplicas?: number; observedGeneration?: number };
};

/**
 * The status lag once the workflows have settled a step: how long until the MachineDeployment's object shows
 * it (replicas, ready and up to date, for its current generation), and, per machine Running, from when its
 * owner saw it Running to when the bench's watch saw its Machine object Running.
 */
async function statusLag(
  door: ManagementApiDoor,
  client: CaptClient,
  replicas: number,
): Promise<{ objectMs: number; machineMs: { p50: number; p95: number; max: number; count: number } }> {
  const settledAt = Date.now();
  for (const deadline = settledAt + 300_000; ; await sleep(250)) {
    const o = await door.object<MachineDeploymentObject>('machinedeployment', MD);
    const st = o.status ?? {};
    if (
      st.observedGeneration === o.metadata.generation &&
      (st.replicas ?? 0) === replicas &&
      (st.readyReplicas ?? 0) === replicas &&
      (st.upToDateReplicas ?? 0) === replicas
    )
      break;
    if (Date.now() > deadline)
      throw new Error(`the MachineDeployment object did not show ${replicas} ready replicas: ${JSON.stringify(st)}`);
  }
  const objectMs = Date.now() - settledAt;
  const records = (await client.ownerStatus('machinedeployment', 'default', MD)).machines;
  for (const deadline = Date.now() + 300_000; records.some((r) => !door.seenRunning.has(r.name)); await sleep(250))
    if (Date.now() > deadline) throw new Error('not every Machine object was seen Running');
  const lags = records.map((r) => door.seenRunning.get(r.name)! - Date.parse(r.runningSince!)).sort((a, b) => a - b);
  const at = (q: number) => lags[Math.min(lags.length - 1, Math.floor(q * lags.length))] ?? 0;
  return { objectMs, machineMs: { p50: at(0.5), p95: at(0.95), max: lags.at(-1) ?? 0, count: lags.length } };
}

async function main(): Promise<void> {
  const h = new MachineHarness(undefined, {
    guard: false,
    metrics: true,
    ...(cacheBound ? { workerEnv: { CAPT_MAX_CACHED_WORKFLOWS: cacheBound } } : {}),
  });
  await h.start();
  const client = await CaptClient.connect({ address: h.env.address });
  const serverPids = (await processesMentioning(['start-dev'])).map((p) => p.pid);
  const memory = memoryWatcher(h.worker!.pid, serverPids);
  // Temporal's own counters of work done and calls refused (BusyWorkflow and the rest), per step.
  const temporal = captCounters(await temporalMetricsUrl(serverPids));
  const kept = [
    'temporalWork',
    'resourceExhaustedByCause',
    'resourceExhaustedByOperation',
    'workflowTaskShareOfStep',
  ] as const;
  const temporalSteps: Record<string, Counters> = {};
  const countersNow = async (): Promise<Counters> => ({
    ...(await temporal.read()),
    workflowTaskSeconds: await workflowTaskSeconds(h.metricsUrl!),
  });
  const countTemporal = async (step: string, before: Counters, stepSeconds: number) => {
    const delta = countersBetween(before, await countersNow());
    // The share of the step's wall time each kind's tasks took: near 1 would make it the bottleneck.
    delta.workflowTaskShareOfStep = Object.fromEntries(
      Object.entries(delta.workflowTaskSeconds ?? {}).map(([type, seconds]) => [
        type,
        Number((seconds / stepSeconds).toFixed(3)),
      ]),
    );
    temporalSteps[step] = Object.fromEntries(kept.map((k) => [k, delta[k] ?? {}]));
    console.log(`${step}: Temporal ${JSON.stringify(temporalSteps[step])}`);
  };
  // Declared before the stop that reads it: an interrupt while the door opens stops the stack without it.
  // eslint-disable-next-line prefer-const
  let door: ManagementApiDoor | undefined;
  const { stop, letGo } = stopOnSignal("capt's stack and its machines", async () => {
    await memory.stop();
    await door?.stop();
    await client.close();
    await h.stop();
  });
  // A door that does not open has stopped what it started; the rest of the stack goes with the same stop.
  door = throughApi
    ? await ManagementApiDoor.start(h.env.address, h.home).catch(async (err: unknown) => {
        await stop();
        letGo();
        throw err;
      })
    : undefined;
  const ops = door ? throughManagementApi(door) : throughCli(client, h.env.address);
  const result: Record<string, unknown> = {
    ...resultHeader(),
    workers,
    door: door ? 'management API (kubectl, capt bridge)' : 'capt CLI',
    ...(cacheBound ? { maxCachedWorkflows: Number(cacheBound) } : {}),
  };
  const cpu = () => cpuSeconds(h.worker!.pid, door);
  const lags: Record<string, Awaited<ReturnType<typeof statusLag>>> = {};
  const requests: Record<string, number> = {};
  const requestsByKind: Record<string, Record<string, number>> = {};
  // After a step the workflows have settled: how long its objects took to show it, and what it cost the API.
  const observe = async (step: string, replicas: number, machines: number, before: Record<string, number>) => {
    if (!door) return;
    lags[step] = await statusLag(door, client, replicas);
    const made = Object.entries(await door.requests()).map(
      ([kind, n]) => [kind, (n - (before[kind] ?? 0)) / machines] as const,
    );
    requests[step] = made.reduce((sum, [, n]) => sum + n, 0);
    requestsByKind[step] = Object.fromEntries(
      made
        .filter(([, n]) => n >= 0.01)
        .sort(([, a], [, b]) => b - a)
        .map(([kind, n]) => [kind, Math.round(n * 100) / 100]),
    );
    console.log(
      `${step}: status lag ${JSON.stringify(lags[step])}; ${requests[step]} API requests per machine: ${JSON.stringify(requestsByKind[step])}`,
    );
  };
  const requestCount = async () => (door ? door.requests() : {});
  try {
    // 1000 nodes need more /24 node ranges than the quickstart's /16 pod network holds, 5,000 more than a /12
    // (kept for the runs below that, as they were measured); 10.128.0.0/10 stays clear of the service range.
    const quickstart = (await readFile(join(root, 'examples/quickstart.yaml'), 'utf8')).replace(
      'maxSurge: 1',
      "maxSurge: '10%'",
    );
    // Past 4000 Nodes the cluster agent renews their Leases late on two shared cores, and the local cluster's 20 s
    // node-monitor grace (tests see a dead machine sooner) then flaps them Unknown: such a cluster takes
    // Kubernetes' default, 50 s, as an operator of a large cluster would set it.
    const text =
      workers > 4000
        ? quickstart.replace(
            '  kubeadmConfigSpec:\n',
            '  kubeadmConfigSpec:\n    clusterConfiguration:\n      controllerManager:\n        extraArgs:\n          - name: node-monitor-grace-period\n            value: 50s\n',
          )
        : quickstart;
    const variables = {
      CLUSTER_NAME: 'bench',
      CONTROL_PLANE_MACHINE_COUNT: '1',
      WORKER_MACHINE_COUNT: '0',
      POD_CIDR: workers > 4000 ? '10.128.0.0/10' : '10.128.0.0/12',
    };
    const [model] = loadManifests([{ file: 'quickstart.yaml', text }], variables) as [ClusterModel];
    await ops.apply(model, substituteVariables(text, variables).text);
    await client.waitForCluster('default', 'bench', () => undefined, 600_000);

    let startedAt = Date.now();
    let requestsBefore = await requestCount();
    const cpuBeforeScaleUp = await cpu();
    let temporalBefore = await countersNow();
    await ops.scale(workers);
    const scaleUp = await settle(client, workers, 'scale-up', startedAt);
    const cpuScaleUp = perMachine(cpuBeforeScaleUp, await cpu(), workers);
    await countTemporal('scaleUp', temporalBefore, scaleUp);
    console.log(`scale-up: ${workers} workers Running in ${scaleUp} s`);
    await observe('scaleUp', workers, workers, requestsBefore);

    // One wave of the rollout as its own figures: create maxSurge machines, then delete them; or, where that would
    // pass the most machines an owner runs, delete them first and create them again.
    const wave = Math.ceil(workers / 10);
    const createFirst = workers + wave <= maxMachinesPerOwner;
    console.log(`wave: ${wave} machines ${createFirst ? 'created, then deleted' : 'deleted, then created'}`);
    const waveStep = async (replicas: number, what: string) => {
      const started = Date.now();
      await ops.scale(replicas);
      const seconds = await settle(client, replicas, what, started);
      while ((await providerMachines()) > replicas) await sleep(200);
      return { seconds, withProvider: (Date.now() - started) / 1000 };
    };
    let created, deleted;
    if (createFirst) {
      created = await waveStep(workers + wave, 'wave create');
      deleted = await waveStep(workers, 'wave delete');
    } else {
      deleted = await waveStep(workers - wave, 'wave delete');
      created = await waveStep(workers, 'wave create');
    }
    const waveCreate = created.seconds;
    const waveDelete = deleted.seconds;
    const waveDeleteProvider = deleted.withProvider;

    startedAt = Date.now();
    requestsBefore = await requestCount();
    const cpuBeforeRollout = await cpu();
    temporalBefore = await countersNow();
    const before = (await client.ownerStatus('machinedeployment', 'default', MD)).revision;
    await ops.restart();
    // Through the management API the restart reaches the workflow at the bridge's next pass.
    for (const deadline = Date.now() + 120_000; ; await sleep(250)) {
      if ((await client.ownerStatus('machinedeployment', 'default', MD)).revision !== before) break;
      if (Date.now() > deadline) throw new Error('the restart did not reach the MachineDeployment within 120 s');
    }
    console.log(`rollout: started ${(Date.now() - startedAt) / 1000} s after the restart was asked`);
    const rollout = await settle(client, workers, 'rollout', startedAt);
    const cpuRollout = perMachine(cpuBeforeRollout, await cpu(), workers);
    await countTemporal('rollout', temporalBefore, rollout);
    const waves = Math.ceil(workers / wave);
    const ideal = waves * (waveCreate + waveDeleteProvider);
    console.log(
      `rollout: ${rollout} s; ideal ${ideal.toFixed(1)} s (${waves} waves of ${waveCreate} s create + ${waveDeleteProvider} s delete)`,
    );
    await observe('rollout', workers, workers, requestsBefore);

    startedAt = Date.now();
    requestsBefore = await requestCount();
    temporalBefore = await countersNow();
    await ops.scale(0);
    while ((await client.ownerStatus('machinedeployment', 'default', MD)).machines.length > 0) await sleep(500);
    const scaleDown = (Date.now() - startedAt) / 1000;
    await countTemporal('scaleDown', temporalBefore, scaleDown);
    await observe('scaleDown', 0, workers, requestsBefore);
    startedAt = Date.now();
    await ops.deleteCluster();
    const deletion = (Date.now() - startedAt) / 1000;

    const histories = await measureHistories(h.env.client);
    const machineRuns = new Set<string>();
    let running = 0;
    for await (const wf of h.env.client.workflow.list()) {
      if (wf.workflowId.startsWith('machine/')) machineRuns.add(wf.workflowId);
      if (wf.status.name === 'RUNNING') running++;
    }
    const leftover = {
      providerMachines: await providerMachines(),
      clusterDirectory: (await readdir(clusterDir('default', 'bench')).catch(() => [])).length,
      processes: (await processesMentioning([join(h.home, 'local')])).length,
      runningWorkflows: running,
      ...(door
        ? { apiObjects: (await door.kubectl('get', 'clusters,machinesets,machines', '-A', '-o', 'name')).trim() }
        : {}),
    };
    Object.assign(result, {
      seconds: {
        scaleUp,
        waveCreate,
        waveDelete,
        waveDeleteProvider,
        rollout,
        rolloutIdeal: ideal,
        scaleDownToZero: scaleDown,
        clusterDelete: deletion,
      },
      machinesPerSecond: { scaleUp: workers / scaleUp, rollout: workers / rollout },
      rolloutOverIdeal: rollout / ideal,
      cpuSecondsPerMachine: { scaleUp: cpuScaleUp, rolloutReplacement: cpuRollout },
      peakRssMiB: memory.peaks,
      histories: {
        runs: histories.runs,
        maxEvents: histories.maxHistoryEvents,
        maxBytes: histories.maxHistoryBytes,
        largest: histories.largest,
        maxPayloadBytes: histories.maxPayloadBytes,
        failedWorkflowTasks: histories.failedWorkflowTasks.length,
        failedWorkflowTaskCauses: histories.failedWorkflowTasks.slice(0, 10),
      },
      actions: {
        total: histories.actions,
        machineLifecycles: machineRuns.size,
        perMachine: histories.actions / machineRuns.size,
        perMachineByKind: Object.fromEntries(
          Object.entries(histories.actionsByKind)
            .sort(([, a], [, b]) => b - a)
            .map(([k, n]) => [k, Math.round((n / machineRuns.size) * 100) / 100]),
        ),
      },
      temporal: temporalSteps,
      leftover,
      ...(door
        ? {
            statusLag: lags,
            managementApiRequestsPerMachine: requests,
            managementApiRequestsPerMachineByKind: requestsByKind,
          }
        : {}),
      ...(h.metricsUrl ? { workflowCache: await workflowCacheFigures(h.metricsUrl, machineRuns.size) } : {}),
    });
  } finally {
    await stop();
    letGo();
  }
  await writeResult(
    `capt-scale-${workers}${door ? '-management-api' : ''}${cacheBound ? `-cache-${cacheBound}` : ''}`,
    result,
  );
}

runBenchmark(main);
