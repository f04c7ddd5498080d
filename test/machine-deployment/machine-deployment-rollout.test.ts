import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { KubeClient } from '../../src/kube/kube-client';
import { clusterDir, machinesDir } from '../../providers/local/layout';
import { loadManifests } from '../../src/api/load-manifests';
import type { ClusterModel, MachineDeploymentModel } from '../../src/api/model';
import { failedMachines, RejectedError } from '../../src/client/capt-client';
import { availableKubernetesVersions } from '../../src/tools';
import type { ClusterStatus } from '../../src/contract/cluster';
import type { OwnerStatus } from '../../src/contract/owner';
import { harnessWithClient } from '../fixtures/machine-harness';
import { until } from '../fixtures/until';
import { Workloads } from '../fixtures/workloads';

const run = promisify(execFile);
const root = join(__dirname, '../../..');
const [older, newer] = availableKubernetesVersions().slice(-2) as [string, string];
const suite = harnessWithClient();
const h = suite.harness;
let kube: KubeClient;
let model: ClusterModel;
const MD = 'ro-md-0';

const status = () => suite.client.ownerStatus('machinedeployment', 'default', MD);
const history = async () =>
  (await suite.client.rolloutHistory('machinedeployment', 'default', MD)).map((r) => [r.revision, r.version, r.cause]);

/** The model with the MachineDeployment changed; the control plane stays at the newer version. */
function withMd(change: (md: MachineDeploymentModel) => MachineDeploymentModel): ClusterModel {
  model = { ...model, machineDeployments: [change(structuredClone(model.machineDeployments[0]!))] };
  return model;
}

async function capt(...args: string[]): Promise<{ code: number; stdout: string }> {
  return run(process.execPath, [join(root, 'dist/src/cli/main.js'), ...args], {
    env: { ...process.env, TEMPORAL_ADDRESS: h.env.address },
  }).then(
    (r) => ({ code: 0, stdout: r.stdout }),
    (e: { code: number; stdout: string }) => ({ code: e.code, stdout: e.stdout }),
  );
}

const watchers = new Set<() => void>();
after(() => watchers.forEach((stop) => stop()));

/**
 * Samples, every 250 ms while a rollout runs, the MachineDeployment's machines as the provider holds them
 * (machine directories) and its Nodes in the workload cluster: total and Ready-and-schedulable.
 */
function boundsWatcher(replicas: number, maxSurge: number, maxUnavailable: number) {
  let running = true;
  // A failed step must not leave the watcher polling: the file's `after` stops every one still running.
  watchers.add(() => (running = false));
  const violations: string[] = [];
  let samples = 0;
  let peak = 0;
  let trough = Infinity;
  const done = (async () => {
    while (running) {
      const [dirs, nodes] = await Promise.all([
        readdir(machinesDir(clusterDir('default', 'ro'))).catch(() => [] as string[]),
        kube.listNodes(),
      ]);
      const providerMachines = dirs.filter((d) => d.startsWith(`${MD}-`)).length;
      const mine = nodes.filter((n) => n.metadata!.name!.startsWith(`${MD}-`));
      const serving = mine.filter(
        (n) => !n.spec?.unschedulable && n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
      ).length;
      samples++;
      peak = Math.max(peak, providerMachines, mine.length);
      trough = Math.min(trough, serving);
      if (providerMachines > replicas + maxSurge)
        violations.push(`${providerMachines} provider machines > ${replicas} + ${maxSurge}`);
      if (mine.length > replicas + maxSurge) violations.push(`${mine.length} nodes > ${replicas} + ${maxSurge}`);
      if (serving < replicas - maxUnavailable)
        violations.push(`${serving} Ready schedulable nodes < ${replicas} - ${maxUnavailable}`);
      await sleep(250);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await done;
      return { samples, peak, trough, violations };
    },
  };
}

// The records say why a wait timed out: which machines remain, of which set, created when.
const describeRecords = (s: OwnerStatus | undefined) =>
  `${s?.step} [${s?.machines.map((m) => `${m.name} ${m.phase}${m.deleting ? ' deleting' : ''} set ${m.templateHash.slice(0, 6)} created ${m.createdAt}`).join(', ')}]`;

/** Polls the status until `done` holds of it. */
const untilStatus = (done: (s: OwnerStatus) => boolean, what: string, timeoutMs?: number) =>
  until(what, status, { done, timeoutMs, describe: describeRecords });

/** Waits until the rollout is complete with `replicas` machines, every one on `version`; `during` sees each status until it returns true. */
async function rolledOut(
  version: string,
  replicas: number,
  during?: (s: OwnerStatus) => Promise<boolean>,
): Promise<OwnerStatus> {
  let duringDone = !during;
  // In `done`, not in the read: a read's error is retried, and a failed kill must fail the test at once.
  const complete = async (s: OwnerStatus) => {
    if (!duringDone) duringDone = await during!(s);
    return (
      s.rolloutComplete &&
      s.machines.length === replicas &&
      s.machines.every((m) => m.version === version && m.phase === 'Running')
    );
  };
  return until(`the rollout to ${version}`, status, { done: complete, timeoutMs: 420_000, describe: describeRecords });
}

const newestSetMachines = (s: OwnerStatus) => s.machines.filter((m) => m.templateHash === s.machineSets!.at(-1)!.hash);

test(`MachineDeployment of 5: rollouts within maxSurge/maxUnavailable (1/0 with the worker killed, then 0/2), history and undo, pause with scale, supersede, OnDelete with a held drain, rolloutAfter, bad input refused`, async () => {
  const text = await readFile(join(root, 'examples/quickstart.yaml'), 'utf8');
  [model] = loadManifests([{ file: 'quickstart.yaml', text }], {
    CLUSTER_NAME: 'ro',
    CONTROL_PLANE_MACHINE_COUNT: '1',
    WORKER_MACHINE_COUNT: '5',
    KUBERNETES_VERSION: newer,
  }) as [ClusterModel];
  await suite.client.apply([withMd((md) => ({ ...md, template: { ...md.template, version: older } }))]);
  const ready = await suite.client.waitForCluster('default', 'ro', () => undefined, 600_000);
  assert.equal(ready.phase, 'Provisioned', failedMachines(ready));
  kube = new KubeClient(await suite.client.kubeconfig('default', 'ro'));
  assert.deepEqual(await history(), [[1, older, 'created']]);

  // Rollout 1: maxSurge 1, maxUnavailable 0; the worker is SIGKILLed once two new machines exist.
  let watcher = boundsWatcher(5, 1, 0);
  await suite.client.apply([withMd((md) => ({ ...md, template: { ...md.template, version: newer } }))]);
  let killed = false;
  let midRollout: ClusterStatus | undefined;
  let done = await rolledOut(newer, 5, async (s) => {
    if (newestSetMachines(s).length < 2) return false;
    // With maxUnavailable 0 the MachineDeployment stays Available throughout, and so must the cluster's workers.
    midRollout ??= await suite.client.clusterSummary('default', 'ro');
    await h.killWorker();
    await sleep(1000);
    await h.startWorker();
    return (killed = true);
  });
  let bounds = await watcher.stop();
  console.log(
    `rollout 1 (maxSurge 1, maxUnavailable 0): ${bounds.samples} samples, at most ${bounds.peak} machines/nodes, at least ${bounds.trough} serving nodes`,
  );
  assert.ok(killed, 'the worker was killed mid-rollout');
  assert.deepEqual(
    [midRollout?.phase, midRollout?.conditions.filter((c) => c.type === 'Available' || c.type === 'WorkersAvailable')],
    [
      'Provisioned',
      [
        { type: 'Available', status: 'True' },
        { type: 'WorkersAvailable', status: 'True' },
      ],
    ],
    'mid-rollout (maxUnavailable 0) the cluster stays Provisioned with its workers available',
  );
  assert.deepEqual(bounds.violations, []);
  assert.equal(done.machines.length, 5);
  assert.equal(
    new Set(done.machines.map((m) => m.templateHash)).size,
    1,
    'every machine belongs to the new MachineSet',
  );
  assert.equal(
    (await readdir(machinesDir(clusterDir('default', 'ro')))).filter((d) => d.startsWith(`${MD}-`)).length,
    5,
    'the provider holds exactly 5 machines',
  );
  assert.deepEqual(
    (await history()).map((r) => r.slice(0, 2)),
    [
      [1, older],
      [2, newer],
    ],
  );

  // A strategy change applies in place; then undo to revision 1 rolls back with maxSurge 0, maxUnavailable 2.
  await suite.client.apply([withMd((md) => ({ ...md, strategy: { ...md.strategy, maxSurge: 0, maxUnavailable: 2 } }))]);
  assert.equal((await status()).revision, 2, 'a strategy change is no new revision');
  await assert.rejects(
    suite.client.rolloutUndo('machinedeployment', 'default', MD, 9),
    (e: Error) => e instanceof RejectedError && /has no revision 9; revisions: 1, 2/.test(e.message),
  );
  watcher = boundsWatcher(5, 0, 2);
  const undone = await capt('rollout', 'undo', `machinedeployment/${MD}`, '--to-revision', '1');
  assert.deepEqual(
    [undone.code, undone.stdout.trim()],
    [0, `machinedeployment/${MD} rolled back: revision 3, ${older}`],
  );
  done = await rolledOut(older, 5);
  bounds = await watcher.stop();
  console.log(
    `rollout 2 (undo; maxSurge 0, maxUnavailable 2): ${bounds.samples} samples, at most ${bounds.peak} machines/nodes, at least ${bounds.trough} serving nodes`,
  );
  assert.deepEqual(bounds.violations, []);
  assert.deepEqual(
    await history(),
    [
      [2, newer, 'capt apply'],
      [3, older, 'undo to revision 1'],
    ],
    'undo re-applies revision 1 as revision 3',
  );
  const historyCli = await capt('rollout', 'history', `machinedeployment/${MD}`);
  assert.match(historyCli.stdout, /3\s+v\S+\s+version v\S+ -> v\S+\s+undo to revision 1/);

  // Pause mid-rollout: nothing more is replaced, a scale still applies; resume completes.
  await suite.client.apply([
    withMd((md) => ({
      ...md,
      strategy: { ...md.strategy, maxSurge: 1, maxUnavailable: 0 },
      template: { ...md.template, version: newer },
    })),
  ]);
  await untilStatus((s) => newestSetMachines(s).length >= 1, 'the first machine of revision 4');
  assert.deepEqual(await capt('rollout', 'pause', `machinedeployment/${MD}`), {
    code: 0,
    stdout: `machinedeployment/${MD} paused\n`,
  });
  const atPause = new Set((await status()).machines.map((m) => m.name));
  await sleep(8000);
  const paused = await status();
  assert.deepEqual(
    paused.machines.map((m) => m.name).filter((n) => !atPause.has(n)),
    [],
    'no machine is created while paused',
  );
  assert.ok(paused.paused && !paused.rolloutComplete);
  assert.equal(
    (await capt('rollout', 'status', `machinedeployment/${MD}`)).stdout.split('\n')[0],
    `machinedeployment/${MD}: rollout paused: revision 4 (${newer})`,
  );
  await suite.client.scale('machinedeployment', 'default', MD, 6);
  await untilStatus((s) => s.machines.some((m) => !atPause.has(m.name)), 'a scale to apply while paused', 120_000);
  assert.deepEqual(await capt('rollout', 'resume', `machinedeployment/${MD}`), {
    code: 0,
    stdout: `machinedeployment/${MD} resumed\n`,
  });
  const watched = await capt('rollout', 'status', `machinedeployment/${MD}`, '--watch', '--timeout', '6m');
  assert.equal(watched.code, 0);
  assert.match(
    watched.stdout,
    new RegExp(`machinedeployment/${MD} successfully rolled out \\(revision 4, ${newer}\\)`),
  );
  done = await rolledOut(newer, 6);

  // Supersede: a second template change while the first rolls replaces it; the bounds hold throughout.
  watcher = boundsWatcher(6, 1, 0);
  await suite.client.apply([withMd((md) => ({ ...md, replicas: 6, template: { ...md.template, version: older } }))]);
  await untilStatus((s) => newestSetMachines(s).some((m) => m.phase === 'Running'), 'a running machine of revision 5');
  const labelled = withMd((md) => {
    md.template.bootstrap.config.joinConfiguration!.nodeRegistration!.kubeletExtraArgs = {
      'node-labels': 'capt.example/pool=md-0-b',
    };
    return md;
  });
  await suite.client.apply([labelled]);
  done = await rolledOut(older, 6);
  bounds = await watcher.stop();
  assert.deepEqual(bounds.violations, []);
  const final = (await suite.client.rolloutHistory('machinedeployment', 'default', MD)).at(-1)!;
  assert.equal(final.change, 'bootstrap changed');
  assert.ok(
    done.machines.every((m) => m.templateHash === done.machineSets!.at(-1)!.hash),
    'every machine is on the superseding template',
  );
  const nodes = (await kube.listNodes()).filter((n) => n.metadata!.name!.startsWith(`${MD}-`));
  assert.equal(nodes.length, 6);
  assert.ok(nodes.every((n) => n.metadata!.labels!['capt.example/pool'] === 'md-0-b'));

  // A template label is no rollout: it reaches the running machines, and their Nodes (node.cluster.x-k8s.io/ labels), in place.
  const revisionBefore = (await status()).revision;
  await suite.client.apply([
    withMd((md) => ({
      ...md,
      template: { ...md.template, labels: { ...md.template.labels, 'node.cluster.x-k8s.io/tier': 'gold' } },
    })),
  ]);
  const labelledNodes = async () =>
    (await kube.listNodes()).filter(
      (n) => n.metadata!.name!.startsWith(`${MD}-`) && n.metadata!.labels!['node.cluster.x-k8s.io/tier'] === 'gold',
    ).length;
  await until('the label on all 6 Nodes', labelledNodes, { done: (n) => n === 6, timeoutMs: 60_000 });
  const inPlace = await status();
  assert.deepEqual(
    [inPlace.revision, inPlace.machines.map((m) => m.name).sort()],
    [revisionBefore, done.machines.map((m) => m.name).sort()],
    'no new revision, no machine replaced',
  );
  assert.ok(
    (await suite.client.listMachines('default'))
      .filter((m) => m.name.startsWith(`${MD}-`))
      .every((m) => m.labels['node.cluster.x-k8s.io/tier'] === 'gold'),
  );

  // Taints change in place too (Cluster API v1.12's MachineTaint): an Always taint reaches every Node, an
  // OnInitialization one only Nodes that join later (the OnDelete replacement below); a dropped Always taint leaves.
  const dedicated = {
    key: 'capt.example/dedicated',
    value: 'gold',
    effect: 'NoSchedule',
    propagation: 'Always',
  } as const;
  const warming = { key: 'capt.example/warming', effect: 'PreferNoSchedule', propagation: 'OnInitialization' } as const;
  const nodeTaints = async () =>
    Object.fromEntries(
      (await kube.listNodes())
        .filter((n) => n.metadata!.name!.startsWith(`${MD}-`))
        .map((n) => [
          n.metadata!.name!,
          (n.spec?.taints ?? [])
            .filter((t) => t.key.startsWith('capt.example/'))
            .map((t) => `${t.key}=${t.value ?? ''}`)
            .join(','),
        ]),
    );
  await suite.client.apply([withMd((md) => ({ ...md, template: { ...md.template, taints: [dedicated, warming] } }))]);
  await until('the Always taint on all 6 Nodes, the OnInitialization one on none', nodeTaints, {
    done: (t) => Object.values(t).length === 6 && Object.values(t).every((x) => x === 'capt.example/dedicated=gold'),
    timeoutMs: 60_000,
  });
  await suite.client.apply([withMd((md) => ({ ...md, template: { ...md.template, taints: [warming] } }))]);
  await until('the dropped Always taint gone from all 6 Nodes', nodeTaints, {
    done: (t) => Object.values(t).length === 6 && Object.values(t).every((x) => x === ''),
    timeoutMs: 60_000,
  });
  const tainted = await status();
  assert.deepEqual(
    [tainted.revision, tainted.machines.map((m) => m.name).sort()],
    [revisionBefore, done.machines.map((m) => m.name).sort()],
    'taints: no new revision, no machine replaced',
  );

  // OnDelete: a template change replaces nothing until a machine is deleted; its replacement is new.
  await suite.client.apply([
    withMd((md) => ({
      ...md,
      strategy: { ...md.strategy, type: 'OnDelete' },
      template: { ...md.template, version: newer },
    })),
  ]);
  const before = (await status()).machines.map((m) => m.name).sort();
  await sleep(6000);
  assert.deepEqual((await status()).machines.map((m) => m.name).sort(), before, 'OnDelete replaces nothing by itself');
  // The machine to delete holds a pod whose disruption budget allows no eviction: the rollout says so.
  const workloads = new Workloads(await suite.client.kubeconfig('default', 'ro'));
  await workloads.core.createNamespacedPod({
    namespace: 'default',
    body: {
      metadata: { name: 'held', labels: { app: 'held' } },
      spec: { nodeName: before[0]!, containers: [{ name: 'app', image: 'registry.example/app:1' }] },
    },
  });
  // Running first: the Eviction API ignores budgets for a Pending pod, and the drain would not be held at all.
  await until(
    'the held pod running on its node',
    async () => (await workloads.runningOn('default', 'held'))[before[0]!] === 1,
    { timeoutMs: 60_000 },
  );
  await workloads.budget('default', 'held-pdb', 'held', 1);
  assert.equal((await capt('delete', 'machine', before[0]!)).code, 0);
  await untilStatus(
    (s) =>
      s.stepReason === 'RollingOut' &&
      /disruption budget.*held-pdb/.test(s.machines.find((m) => m.name === before[0])?.blocker ?? ''),
    'the rollout to wait on the held drain',
  );
  assert.match(
    (await capt('rollout', 'status', `machinedeployment/${MD}`)).stdout,
    new RegExp(`step: .*${before[0]} Deleting: .*held-pdb`),
  );
  assert.match((await capt('describe', 'cluster', 'ro')).stdout, /held-pdb/);
  await workloads.policy.deleteNamespacedPodDisruptionBudget({ namespace: 'default', name: 'held-pdb' });
  const replaced = await untilStatus(
    (s) =>
      !s.machines.some((m) => m.name === before[0]) &&
      s.machines.length === 6 &&
      s.machines.every((m) => m.phase === 'Running'),
    'the deleted machine replaced',
  );
  const fresh = replaced.machines.filter((m) => !before.includes(m.name));
  assert.deepEqual(
    fresh.map((m) => m.version),
    [newer],
    'one replacement, on the new template',
  );
  assert.equal(replaced.machines.filter((m) => m.version === older).length, 5, 'the others stay');
  const afterJoin = await nodeTaints();
  assert.deepEqual(
    [afterJoin[fresh[0]!.name], Object.values(afterJoin).filter((x) => x !== '').length],
    ['capt.example/warming=', 1],
    'the OnInitialization taint on the Node that joined since, on it only',
  );

  // rolloutAfter: back to RollingUpdate, which finishes the OnDelete rollout; once the time passes, every
  // machine created before it is replaced by a restart revision of the same template.
  const rolloutAfter = new Date(Date.now() + 5000).toISOString();
  await suite.client.apply([
    withMd((md) => ({
      ...md,
      replicas: 6,
      rolloutAfter,
      strategy: { ...md.strategy, type: 'RollingUpdate', maxSurge: 1, maxUnavailable: 0 },
    })),
  ]);
  const restarted = await untilStatus(
    (s) =>
      s.rolloutComplete &&
      s.machines.length === 6 &&
      s.machines.every((m) => m.createdAt > rolloutAfter && m.version === newer),
    'every machine replaced after rolloutAfter',
  );
  const last = (await suite.client.rolloutHistory('machinedeployment', 'default', MD)).at(-1)!;
  assert.deepEqual(
    [last.cause, last.change, last.revision],
    [`rolloutAfter ${rolloutAfter}`, 'same template (restart)', restarted.revision],
  );

  // Bad input changes nothing.
  const revision = (await status()).revision;
  await assert.rejects(
    suite.client.apply([
      withMd((md) => ({
        ...md,
        strategy: { type: 'RollingUpdate', maxSurge: 0, maxUnavailable: 0, deletionOrder: 'Random' },
      })),
    ]),
    /maxSurge and maxUnavailable are both 0/,
  );
  await assert.rejects(
    suite.client.scale('machinedeployment', 'default', MD, -1),
    /replicas must be a whole number >= 0, got -1/,
  );
  assert.equal((await capt('rollout', 'undo', `machinedeployment/${MD}`, '--to-revision', '99')).code, 2);
  const after = await status();
  assert.equal(after.revision, revision);
  assert.equal(after.replicas, 6);

  await suite.client.deleteCluster('default', 'ro');
  await suite.client.waitForDeletion('default', 'ro', () => undefined, 300_000);
  await assert.rejects(readdir(clusterDir('default', 'ro')), /ENOENT/, 'nothing of the cluster is left on disk');
});
