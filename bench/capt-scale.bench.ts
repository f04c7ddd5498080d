import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { clusterDir, machinesDir } from '../providers/local/layout';
import { loadManifests } from '../src/api/load-manifests';
import type { ClusterModel } from '../src/api/model';
import { CaptClient } from '../src/client/capt-client';
import { measureHistories } from '../test/fixtures/history-guard';
import { processesMentioning } from '../test/fixtures/leaks';
import { MachineHarness } from '../test/fixtures/machine-harness';
import { resultHeader, runBenchmark, writeResult } from './bench-result';
import { stopOnSignal } from './stop-on-signal';

/**
 * capt at scale, against the real stack (Temporal dev server, a capt worker process, the local provider):
 * one cluster of 1 control plane + a MachineDeployment scaled to N workers, rolled out at maxSurge 10%,
 * scaled to 0 and deleted. `node dist/bench/capt-scale.bench.js [N]` writes bench/results/capt-scale-<N>.json.
 */
const workers = Number(process.argv[2] ?? 1000);
const root = join(__dirname, '../..');
const MD = 'bench-md-0';

async function rssMiB(pids: number[]): Promise<number> {
  let kib = 0;
  for (const pid of pids)
    kib += Number(/VmRSS:\s+(\d+)/.exec(await readFile(`/proc/${pid}/status`, 'utf8').catch(() => ''))?.[1] ?? 0);
  return Math.round(kib / 1024);
}

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
async function capt(address: string, ...args: string[]): Promise<void> {
  await promisify(execFile)(process.execPath, [join(root, 'dist/src/cli/main.js'), ...args], {
    env: { ...process.env, TEMPORAL_ADDRESS: address },
  });
}

/**
 * CPU seconds (user + system) used so far by each part of the stack, read from /proc. `machineProcesses`
 * is what the launchers' children used once they ended (a worker machine's cloud-init and its sandbox),
 * which no running process shows.
 */
async function cpuSeconds(workerPid: number): Promise<Record<string, number>> {
  // Fields 14-15 are the process's own user and system ticks, 16-17 those of its ended, reaped children.
  const ticksOf = async (pids: number[], first: number) => {
    let ticks = 0;
    for (const pid of pids) {
      const fields = (await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '')).split(') ')[1]?.split(' ') ?? [];
      ticks += Number(fields[first] ?? 0) + Number(fields[first + 1] ?? 0);
    }
    return ticks / 100;
  };
  const of = (pids: number[]) => ticksOf(pids, 11);
  const mentioning = async (needle: string) => (await processesMentioning([needle])).map((p) => p.pid);
  const parts: Record<string, number[]> = {
    worker: [workerPid],
    temporal: await mentioning('start-dev'),
    kubeApiserver: await mentioning('kube-apiserver '),
    etcd: await mentioning('/etcd '),
    kubeControllerManager: await mentioning('kube-controller-manager '),
    kubeScheduler: await mentioning('kube-scheduler '),
    clusterAgent: await mentioning('cluster-agent-main'),
    processLauncher: await mentioning('process-launcher-main'),
    bench: [process.pid],
  };
  const own = Object.fromEntries(
    await Promise.all(Object.entries(parts).map(async ([k, pids]) => [k, await of(pids)] as const)),
  );
  return { ...own, machineProcesses: await ticksOf(parts.processLauncher!, 13) };
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

/**
 * Waits until the MachineDeployment has `replicas` machines, all Running on its newest revision; returns
 * seconds. It watches the cluster's small summary of the MachineDeployment, as `capt get clusters` does, and
 * reads the full status (every machine's record) only to confirm, and for a progress line every 10 s:
 * polling that twice a second would cost the stack more than the operation measured.
 */
async function settle(client: CaptClient, replicas: number, what: string, startedAt = Date.now()): Promise<number> {
  let lastLog = Date.now();
  for (;;) {
    const summary = (await client.clusterSummary('default', 'bench')).machineDeployments.find((m) => m.name === MD);
    const logDue = Date.now() - lastLog > 10_000;
    if ((summary?.ready && summary.replicas === replicas) || logDue) {
      const s = await client.ownerStatus('machinedeployment', 'default', MD);
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

async function main(): Promise<void> {
  const h = new MachineHarness(undefined, { guard: false });
  await h.start();
  const client = await CaptClient.connect({ address: h.env.address });
  const memory = memoryWatcher(
    h.worker!.pid,
    (await processesMentioning(['start-dev'])).map((p) => p.pid),
  );
  const result: Record<string, unknown> = {
    ...resultHeader(),
    workers,
  };
  const { stop, letGo } = stopOnSignal("capt's stack and its machines", async () => {
    await memory.stop();
    await client.close();
    await h.stop();
  });
  try {
    const text = await readFile(join(root, 'examples/quickstart.yaml'), 'utf8');
    const [model] = loadManifests([{ file: 'quickstart.yaml', text }], {
      CLUSTER_NAME: 'bench',
      CONTROL_PLANE_MACHINE_COUNT: '1',
      WORKER_MACHINE_COUNT: '0',
    }) as [ClusterModel];
    // 1000 nodes need more /24 node ranges than the quickstart's /16 pod network holds.
    model.podSubnet = '10.128.0.0/12';
    const md = model.machineDeployments[0]!;
    md.strategy = { ...md.strategy, type: 'RollingUpdate', maxSurge: '10%', maxUnavailable: 0 };
    await client.apply([model]);
    await client.waitForCluster('default', 'bench', () => undefined, 600_000);

    let startedAt = Date.now();
    const cpuBeforeScaleUp = await cpuSeconds(h.worker!.pid);
    await capt(h.env.address, 'scale', 'machinedeployment', MD, '--replicas', String(workers));
    const scaleUp = await settle(client, workers, 'scale-up', startedAt);
    const cpuScaleUp = perMachine(cpuBeforeScaleUp, await cpuSeconds(h.worker!.pid), workers);
    console.log(`scale-up: ${workers} workers Running in ${scaleUp} s`);

    // One wave of the rollout as its own figures: create maxSurge machines, then delete them.
    const wave = Math.ceil(workers / 10);
    startedAt = Date.now();
    await capt(h.env.address, 'scale', 'machinedeployment', MD, '--replicas', String(workers + wave));
    const waveCreate = await settle(client, workers + wave, 'wave create', startedAt);
    startedAt = Date.now();
    await capt(h.env.address, 'scale', 'machinedeployment', MD, '--replicas', String(workers));
    const waveDelete = await settle(client, workers, 'wave delete', startedAt);
    while ((await providerMachines()) > workers) await sleep(200);
    const waveDeleteProvider = (Date.now() - startedAt) / 1000;

    startedAt = Date.now();
    const cpuBeforeRollout = await cpuSeconds(h.worker!.pid);
    await capt(h.env.address, 'rollout', 'restart', `machinedeployment/${MD}`);
    const rollout = await settle(client, workers, 'rollout', startedAt);
    const cpuRollout = perMachine(cpuBeforeRollout, await cpuSeconds(h.worker!.pid), workers);
    const waves = Math.ceil(workers / wave);
    const ideal = waves * (waveCreate + waveDeleteProvider);
    console.log(
      `rollout: ${rollout} s; ideal ${ideal.toFixed(1)} s (${waves} waves of ${waveCreate} s create + ${waveDeleteProvider} s delete)`,
    );

    startedAt = Date.now();
    await capt(h.env.address, 'scale', 'machinedeployment', MD, '--replicas', '0');
    while ((await client.ownerStatus('machinedeployment', 'default', MD)).machines.length > 0) await sleep(500);
    const scaleDown = (Date.now() - startedAt) / 1000;
    startedAt = Date.now();
    await capt(h.env.address, 'delete', 'cluster', 'bench', '--wait', '--timeout', '15m');
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
      leftover,
    });
  } finally {
    await stop();
    letGo();
  }
  await writeResult(`capt-scale-${workers}`, result);
}

runBenchmark(main);
