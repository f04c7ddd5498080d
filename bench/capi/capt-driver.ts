import { readFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { loadManifests } from '../../src/api/load-manifests';
import type { ClusterModel } from '../../src/api/model';
import { CaptClient, clusterComplete } from '../../src/client/capt-client';
import type { ClusterStatus } from '../../src/contract/cluster';
import { toolPaths } from '../../src/tools';
import { processesMentioning } from '../../test/fixtures/leaks';
import { MachineHarness } from '../../test/fixtures/machine-harness';
import { captCounters, temporalMetricsUrl } from './capt-counters';
import { workerStepProfiler, type WorkerStepProfiler } from './cpu-profile';
import type { Parts } from './process-usage';
import { waitUntil, type ClusterDriver, type Workload } from './scenario';

const root = join(__dirname, '../../..');
const ns = 'default';
const cluster = 'bench';

/** The parent pid of a process, from /proc. */
async function parentOf(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** The summary says every owner runs its replicas and nothing applied is pending: worth confirming with the full status. */
const summarySettled = (s: ClusterStatus) =>
  s.observedGeneration === s.generation &&
  s.pending.length === 0 &&
  [s.controlPlane, ...s.machineDeployments].every((o) => !o || o.ready);

const describeSummary = (s: ClusterStatus) =>
  [s.controlPlane, ...s.machineDeployments]
    .map((o) =>
      o ? `${o.kind} ${o.name}: ${o.replicas} replicas, ${o.ready ? 'ready' : 'not ready'}, ${o.version}` : '',
    )
    .join('; ') +
  (s.pending.length ? `; pending: ${s.pending.map((p) => `${p.kind} ${p.name} ${p.reason}`).join(', ')}` : '');

export interface CaptStack {
  driver: ClusterDriver;
  versions: Record<string, string>;
  stop(): Promise<void>;
}

/**
 * capt as bench/capt-scale.bench.ts runs it: the Temporal dev server, one capt worker process and the local
 * provider (real etcd and kube-apiserver for each control-plane machine, simulated kubelets for the
 * workers), driven through CaptClient with examples/quickstart.yaml. Progress is read from the cluster
 * workflow's small summary each second; the full status (every machine) only to confirm the end.
 */
export async function startCapt(
  w: Workload,
  log: (line: string) => void,
  profileSteps: readonly string[] = [],
): Promise<CaptStack> {
  const h = new MachineHarness(undefined, { guard: false });
  const profiler = profileSteps.length ? await workerStepProfiler(profileSteps, () => h.worker!.pid) : undefined;
  await withEnv(profiler?.env ?? {}, () => h.start());
  const client = await CaptClient.connect({ address: h.env.address });
  const stop = async () => {
    await client.close();
    await h.stop();
    await profiler?.dispose();
  };
  try {
    return await captStack(h, client, w, log, stop, profiler);
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Runs `start` with `env` added to this process's environment, which the processes it starts inherit. */
async function withEnv(env: Record<string, string>, start: () => Promise<void>): Promise<void> {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  try {
    await start();
  } finally {
    for (const [k, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[k];
      else process.env[k] = value;
    }
  }
}

async function captStack(
  h: MachineHarness,
  client: CaptClient,
  w: Workload,
  log: (line: string) => void,
  stop: () => Promise<void>,
  profiler: WorkerStepProfiler | undefined,
): Promise<CaptStack> {
  const timeoutMs = (300 + w.workers * 20) * 1000;
  const text = await readFile(join(root, 'examples/quickstart.yaml'), 'utf8');
  const vars = {
    CLUSTER_NAME: cluster,
    CONTROL_PLANE_MACHINE_COUNT: '1',
    WORKER_MACHINE_COUNT: String(w.workers),
    KUBERNETES_VERSION: w.fromVersion,
  };
  const [model] = loadManifests([{ file: 'quickstart.yaml', text }], vars) as [ClusterModel];
  // 1000 nodes need more /24 node ranges than the quickstart's /16 pod network holds.
  model.podSubnet = '10.128.0.0/12';
  const md = model.machineDeployments[0]!;
  md.strategy = { ...md.strategy, type: 'RollingUpdate', maxSurge: '10%', maxUnavailable: 0 };
  // Cluster API's e2e VM delay (10 s) as each worker's boot; control planes start real etcd and apiservers, delay enough.
  if (w.delays === 'e2e')
    md.template = {
      ...md.template,
      infrastructure: {
        ...md.template.infrastructure,
        spec: { ...md.template.infrastructure.spec, bootDelaySeconds: 10 },
      },
    };
  const summary = () => client.clusterSummary(ns, cluster);
  const settle = (what: string) =>
    waitUntil(
      what,
      async () => summarySettled(await summary()) && clusterComplete(await client.clusterStatus(ns, cluster)),
      async () => describeSummary(await summary()),
      log,
      timeoutMs,
    );
  const applyAndSettle = async (what: string) => {
    await client.apply([model]);
    await settle(what);
  };
  const temporal = (await processesMentioning(['start-dev'])).map((p) => p.pid);
  const ownTemporal: number[] = [];
  for (const pid of temporal) if ((await parentOf(pid)) === process.pid) ownTemporal.push(pid);
  const driver: ClusterDriver = {
    create: () => applyAndSettle('create'),
    async scaleControlPlane(replicas) {
      model.controlPlane.replicas = replicas;
      await applyAndSettle('control-plane scale');
    },
    async upgradeControlPlane(version) {
      model.controlPlane.version = version;
      await applyAndSettle('control-plane upgrade');
    },
    async rolloutWorkers(version) {
      md.template.version = version;
      await applyAndSettle('worker rollout');
    },
    async scaleWorkersToZero() {
      md.replicas = 0;
      await applyAndSettle('scale to 0');
    },
    async deleteCluster() {
      await client.deleteCluster(ns, cluster);
      await client.waitForDeletion(ns, cluster, () => undefined, timeoutMs);
    },
    async parts(): Promise<Parts> {
      return { worker: [h.worker!.pid], temporal: ownTemporal };
    },
    counters: captCounters(await temporalMetricsUrl(ownTemporal)),
    profiler,
  };
  const { version } = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { version: string };
  // The tool cache keys the Temporal CLI (whose dev server runs here) by its version: .../temporal/<version>/temporal.
  const temporalCli = basename(dirname(toolPaths().temporal));
  return { driver, versions: { capt: version, temporalCli }, stop };
}
