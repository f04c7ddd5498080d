import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ClusterModel } from '../../src/api/model';
import { failedMachines, NotFoundError, RejectedError } from '../../src/client/capt-client';
import type { ClusterView } from '../../src/contract/cluster';
import { KubeClient } from '../../src/kube/kube-client';
import { availableKubernetesVersions } from '../../src/tools';
import { assertClusterGone, assertMachines, quickstartModel } from '../fixtures/cluster-agreement';
import { harnessWithClient } from '../fixtures/machine-harness';
import { startRestartableTemporal, type RestartableTemporal } from '../fixtures/temporal';
import type { WorkerProcess } from '../fixtures/worker-process';

// Two core workers, each with a CAPT_HOME of its own as two hosts would have, and the provider's worker on
// the machines' host. Workers and the Temporal server are SIGKILLed at random instants while capt works;
// every operation still ends with exactly the machines asked for, and nothing is left behind.
let temporal: RestartableTemporal;
const suite = harnessWithClient({
  temporal: async () => (temporal = await startRestartableTemporal()).env,
  worker: false,
});
const h = suite.harness;
const [older, newer] = availableKubernetesVersions().slice(-2) as [string, string];

/** Seeded, so a failing run can be repeated with CAPT_CHAOS_SEED. */
const seed = Number(process.env.CAPT_CHAOS_SEED ?? Date.now() % 1_000_000_007);
let state = seed >>> 0;
function random(): number {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

type Target = 'core-a' | 'core-b' | 'provider' | 'server';
const workers = new Map<Target, WorkerProcess>();
const kills: string[] = [];
const started = Date.now();

async function startWorker(target: Exclude<Target, 'server'>): Promise<void> {
  const home = target === 'provider' ? h.home : join(h.home, target);
  await mkdir(home, { recursive: true });
  // A server that has just come back may still refuse the first connection: try a few times.
  for (let attempt = 1; ; attempt++) {
    try {
      workers.set(target, await h.spawnWorker({ serves: target === 'provider' ? 'local' : 'core', home }));
      return;
    } catch (err) {
      if (attempt === 5) throw err;
      await sleep(1000);
    }
  }
}

/** SIGKILLs `target`, leaves it down for a moment, starts it again; one kill at a time. */
async function kill(target: Target): Promise<void> {
  const downMs = 500 + Math.floor(random() * 2500);
  const at = ((Date.now() - started) / 1000).toFixed(1);
  if (target === 'server') {
    await temporal.killServer();
    await sleep(downMs);
    await temporal.startServer();
  } else {
    const worker = workers.get(target)!;
    worker.child.kill('SIGKILL');
    await worker.exited;
    await sleep(downMs);
    await startWorker(target);
  }
  kills.push(`${target} at +${at} s, down ${(downMs / 1000).toFixed(1)} s`);
}

/**
 * Kills at random instants until `stop` is called or `limit` kills are done: it waits `gapMs` (a random time
 * between the two) before the first kill and after each. `stop` returns the kills done, and how long of the
 * time since the start the killer spent not killing, which bounds how few kills that was (`fewestKills`).
 */
function killAtRandom(targets: readonly Target[], gapMs: readonly [number, number], limit = Infinity) {
  let stopping = false;
  let count = 0;
  const startedAt = Date.now();
  let killingMs = 0;
  let killingSince: number | undefined;
  const done = (async () => {
    while (!stopping && count < limit) {
      const wait = gapMs[0] + random() * (gapMs[1] - gapMs[0]);
      for (const until = Date.now() + wait; !stopping && Date.now() < until;) await sleep(100);
      if (stopping) break;
      killingSince = Date.now();
      await kill(pick(targets));
      killingMs += Date.now() - killingSince;
      killingSince = undefined;
      count++;
    }
  })();
  return {
    stop: async () => {
      const now = Date.now();
      const waitingMs = now - startedAt - killingMs - (killingSince === undefined ? 0 : now - killingSince);
      stopping = true;
      await done;
      return { count, waitingMs };
    },
  };
}

/**
 * The fewest kills a killer without a limit can have done in `waitingMs` of not killing: it never waits more
 * than `maxGapMs` (plus a second for a late timer on a busy machine) before the next kill, and the last wait
 * may be cut short by `stop`.
 */
const fewestKills = (waitingMs: number, maxGapMs: number) => Math.max(0, Math.ceil(waitingMs / (maxGapMs + 1000)) - 1);

/** The three workers, started by the first test: the harness's own before() hook has made its home by then. */
async function ensureWorkers(): Promise<void> {
  if (workers.size) return;
  console.log(`chaos seed ${seed} (CAPT_CHAOS_SEED repeats it)`);
  await startWorker('provider');
  await startWorker('core-a');
  await startWorker('core-b');
}
after(async () => {
  for (const worker of workers.values()) await worker.stop();
  console.log(`kills: ${kills.length}\n${kills.join('\n')}`);
});

/** Retries a client call while the server is down or restarting; capt's own refusals are final. */
async function retrying<T>(call: () => Promise<T>, what: string): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      if (attempt >= 60 || err instanceof RejectedError || err instanceof NotFoundError)
        throw new Error(`${what}: ${(err as Error).message}`, { cause: err });
      await sleep(1000);
    }
  }
}

interface Desired {
  controlPlane: number;
  workers: number;
  version: string;
  workerVersion: string;
}

/** The cluster as asked: every machine Running at its version, the counts, nothing pending or rolling. */
function matches(s: ClusterView, want: Desired): boolean {
  const cp = s.controlPlane;
  const md = s.machineDeployments[0];
  return (
    s.phase === 'Provisioned' &&
    s.pending.length === 0 &&
    !!cp &&
    !!md &&
    cp.machines.length === want.controlPlane &&
    cp.machines.every((m) => m.phase === 'Running' && m.version === want.version) &&
    md.machines.length === want.workers &&
    md.machines.every((m) => m.phase === 'Running' && m.version === want.workerVersion && !m.deleting) &&
    md.rolloutComplete
  );
}

async function waitMatches(
  cluster: string,
  want: Desired,
  extra: (s: ClusterView) => boolean = () => true,
): Promise<ClusterView> {
  let last: ClusterView | undefined;
  for (const deadline = Date.now() + 420_000; Date.now() < deadline; await sleep(500)) {
    last = await suite.client.clusterStatus('default', cluster).catch(() => last);
    if (last && matches(last, want) && extra(last)) return last;
  }
  throw new Error(
    `${cluster} never matched ${JSON.stringify(want)}: ${last?.step}; ${last ? failedMachines(last) : ''}`,
  );
}

const modelOf = (cluster: string, want: Desired, bootDelaySeconds = 1): ClusterModel => {
  const model = quickstartModel(
    cluster,
    {
      CONTROL_PLANE_MACHINE_COUNT: String(want.controlPlane),
      WORKER_MACHINE_COUNT: String(want.workers),
      KUBERNETES_VERSION: want.version,
    },
    bootDelaySeconds,
  );
  const md = model.machineDeployments[0]!;
  return { ...model, machineDeployments: [{ ...md, template: { ...md.template, version: want.workerVersion } }] };
};

const assertGone = (cluster: string) => assertClusterGone(h.env.client, 'default', cluster);

async function deleteCluster(cluster: string): Promise<void> {
  await retrying(() => suite.client.deleteCluster('default', cluster), `delete ${cluster}`);
  await suite.client.waitForDeletion('default', cluster, () => undefined, 420_000);
}

test('a core worker SIGKILLed five times at random instants during a rollout: the other carries on and the rollout completes, each machine once', async () => {
  await ensureWorkers();
  const want: Desired = { controlPlane: 1, workers: 4, version: newer, workerVersion: newer };
  // Workers boot for 8 s, so the rollout (one new machine at a time) outlasts five kill cycles however fast
  // the machine running the test is: each cycle is a gap of 2 s at most, up to 3 s down and a restart.
  await suite.client.apply([modelOf('wk', want, 8)]);
  const ready = await waitMatches('wk', want);
  const kube = new KubeClient(await suite.client.kubeconfig('default', 'wk'));
  const before = await assertMachines(h.env.client, kube, 'default', 'wk', 5, 'after create');
  const { revision } = ready.machineDeployments[0]!;

  const rollout = Date.now();
  await suite.client.rolloutRestart('machinedeployment', 'default', 'wk-md-0');
  const killer = killAtRandom(['core-a', 'core-b'], [300, 2000], 5);
  let longestPauseMs = 0;
  let lastChange = Date.now();
  let lastMachines = '';
  let completedAt = 0;
  for (const deadline = Date.now() + 420_000; !completedAt; await sleep(200)) {
    if (Date.now() > deadline) assert.fail('the rollout did not complete');
    const s = await suite.client.clusterStatus('default', 'wk').catch(() => undefined);
    if (!s) continue;
    const md = s.machineDeployments[0]!;
    const machines = JSON.stringify(md.machines.map((m) => [m.name, m.phase, m.deleting]));
    if (machines !== lastMachines) [lastMachines, lastChange] = [machines, Date.now()];
    longestPauseMs = Math.max(longestPauseMs, Date.now() - lastChange);
    if (md.revision > revision && matches(s, want) && md.machines.every((m) => !before.includes(m.name)))
      completedAt = Date.now();
  }
  const { count: killed } = await killer.stop();
  console.log(
    `rollout of 4 with ${killed} core-worker kills: ${((completedAt - rollout) / 1000).toFixed(1)} s; longest pause between two changes of its machines: ${(longestPauseMs / 1000).toFixed(1)} s`,
  );
  assert.equal(killed, 5, 'five kills landed before the rollout completed');
  const afterRollout = await assertMachines(h.env.client, kube, 'default', 'wk', 5, 'after the rollout');
  assert.equal(
    afterRollout.filter((name) => before.includes(name) && name.startsWith('wk-md-0')).length,
    0,
    'every worker replaced',
  );

  await deleteCluster('wk');
  await assertGone('wk');
});

/** How long the chaos test's killer waits before each kill, at least and at most. */
const chaosGapMs = [3000, 12_000] as const;
const kubes = new Map<string, KubeClient>();

/**
 * Waits until the owners show `cluster` as asked (`waitMatches`), then until the provider, the Nodes and the
 * machine workflows hold exactly the owners' machines, each once, up and at the version asked. Returns the
 * workers' names.
 */
async function settled(cluster: string, want: Desired, extra?: (s: ClusterView) => boolean): Promise<string[]> {
  const s = await waitMatches(cluster, want, extra);
  let kube = kubes.get(cluster);
  if (!kube) {
    kube = new KubeClient(await retrying(() => suite.client.kubeconfig('default', cluster), `${cluster} kubeconfig`));
    kubes.set(cluster, kube);
  }
  const workers = s.machineDeployments[0]!.machines.map((m) => m.name);
  const machines = [
    ...s.controlPlane!.machines.map((m) => ({ name: m.name, version: want.version })),
    ...workers.map((name) => ({ name, version: want.workerVersion })),
  ];
  await assertMachines(h.env.client, kube, 'default', cluster, machines, `${cluster} as asked`);
  return workers;
}

const kept = (before: string[], after: string[]) => after.filter((name) => before.includes(name)).sort();

test('chaos: ten operations (create, scale, rollout, upgrade, delete) while workers and the server are SIGKILLed at random; each ends with the machines asked for in the provider, as Nodes and as workflows, each once; nothing leaked', async () => {
  await ensureWorkers();
  const killer = killAtRandom(['core-a', 'core-b', 'provider', 'server'], chaosGapMs);
  const c1: Desired = { controlPlane: 1, workers: 2, version: older, workerVersion: older };
  const c2: Desired = { controlPlane: 1, workers: 1, version: newer, workerVersion: newer };
  // Each cluster's workers as the provider, the Nodes and Temporal last held them.
  let c1Workers: string[] = [];
  let c2Workers: string[] = [];
  const restart = async (cluster: string, want: Desired) => {
    const md = `${cluster}-md-0`;
    const { revision } = await retrying(() => suite.client.ownerStatus('machinedeployment', 'default', md), md);
    await retrying(() => suite.client.rolloutRestart('machinedeployment', 'default', md), `restart ${md}`);
    return settled(cluster, want, (s) => s.machineDeployments[0]!.revision > revision);
  };
  const operations: [string, () => Promise<unknown>][] = [
    [
      'create c1',
      async () => {
        await retrying(() => suite.client.apply([modelOf('c1', c1)]), 'apply c1');
        c1Workers = await settled('c1', c1);
      },
    ],
    [
      'create c2',
      async () => {
        await retrying(() => suite.client.apply([modelOf('c2', c2)]), 'apply c2');
        c2Workers = await settled('c2', c2);
      },
    ],
    [
      'scale c1 to 4',
      async () => {
        c1.workers = 4;
        await retrying(() => suite.client.scale('machinedeployment', 'default', 'c1-md-0', 4), 'scale c1');
        const before = c1Workers;
        c1Workers = await settled('c1', c1);
        assert.deepEqual(kept(before, c1Workers), [...before].sort(), 'scaling up c1 kept its workers');
      },
    ],
    [
      'rollout restart c1',
      async () => {
        const before = c1Workers;
        c1Workers = await restart('c1', c1);
        assert.deepEqual(kept(before, c1Workers), [], 'the restart replaced every worker of c1');
      },
    ],
    [
      'upgrade c1 control plane',
      async () => {
        c1.version = newer;
        await retrying(() => suite.client.apply([modelOf('c1', c1)]), 'upgrade c1');
        const before = c1Workers;
        c1Workers = await settled('c1', c1);
        assert.deepEqual(kept(before, c1Workers), [...before].sort(), "the control plane's upgrade left c1's workers");
      },
    ],
    [
      'scale c2 to 3',
      async () => {
        c2.workers = 3;
        await retrying(() => suite.client.scale('machinedeployment', 'default', 'c2-md-0', 3), 'scale c2');
        const before = c2Workers;
        c2Workers = await settled('c2', c2);
        assert.deepEqual(kept(before, c2Workers), [...before].sort(), 'scaling up c2 kept its workers');
      },
    ],
    [
      'rollout restart c2',
      async () => {
        const before = c2Workers;
        c2Workers = await restart('c2', c2);
        assert.deepEqual(kept(before, c2Workers), [], 'the restart replaced every worker of c2');
      },
    ],
    [
      'scale c1 to 1',
      async () => {
        c1.workers = 1;
        await retrying(() => suite.client.scale('machinedeployment', 'default', 'c1-md-0', 1), 'scale c1');
        const before = c1Workers;
        c1Workers = await settled('c1', c1);
        assert.deepEqual(kept(before, c1Workers), [...c1Workers].sort(), 'scaling down c1 kept one of its workers');
      },
    ],
    ['delete c2', () => deleteCluster('c2')],
    [
      'upgrade c1 workers',
      async () => {
        c1.workerVersion = newer;
        await retrying(() => suite.client.apply([modelOf('c1', c1)]), 'upgrade c1 workers');
        const before = c1Workers;
        c1Workers = await settled('c1', c1);
        assert.deepEqual(kept(before, c1Workers), [], "the upgrade replaced c1's workers");
      },
    ],
  ];
  let stopped: { count: number; waitingMs: number } | undefined;
  try {
    for (const [name, operation] of operations) {
      const t0 = Date.now();
      await operation();
      console.log(`${name}: ${((Date.now() - t0) / 1000).toFixed(1)} s (${kills.length} kills so far)`);
    }
  } finally {
    stopped = await killer.stop();
    console.log(
      `chaos: ${stopped.count} kills survived over ${operations.length} operations; the killer waited ${(stopped.waitingMs / 1000).toFixed(1)} s, so at least ${fewestKills(stopped.waitingMs, chaosGapMs[1])} were due`,
    );
  }
  const fewest = fewestKills(stopped.waitingMs, chaosGapMs[1]);
  assert.ok(
    stopped.count >= fewest,
    `${stopped.count} kills, yet the killer waited ${(stopped.waitingMs / 1000).toFixed(1)} s, never more than ` +
      `${chaosGapMs[1] / 1000} s before a kill: at least ${fewest} were due, so the kills stopped`,
  );
  // The deletion in the middle, now that the server stays up for the listing.
  await assertGone('c2');
  await deleteCluster('c1');
  await assertGone('c1');
});
