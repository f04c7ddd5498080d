import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { clusterDir, machinesDir } from '../../providers/local/layout';
import { loadManifests } from '../../src/api/load-manifests';
import type { ClusterModel } from '../../src/api/model';
import { failedMachines } from '../../src/client/capt-client';
import { machineMaxAgeAnnotation } from '../../src/contract/machine-max-age';
import { maintenanceWindowAnnotation, rolloutInWindowAnnotation } from '../../src/contract/maintenance-window';
import type { OwnerStatus } from '../../src/contract/owner';
import { runCapt } from '../fixtures/capt-cli';
import { harnessWithClient } from '../fixtures/machine-harness';
import { until } from '../fixtures/until';

const root = join(__dirname, '../../..');
const suite = harnessWithClient();
const h = suite.harness;
const MD = 'rp-md-0';
const maxAge = 30;

const status = (md = MD) => suite.client.ownerStatus('machinedeployment', 'default', md);
const names = (s: OwnerStatus) => s.machines.map((m) => m.name).sort();
const describeRecords = (s: OwnerStatus | undefined) =>
  `${s?.step} [${s?.machines.map((m) => `${m.name} ${m.phase}${m.deleting ? ' deleting' : ''} created ${m.createdAt}`).join(', ')}]`;

/** The quickstart's cluster `name`, 1 control plane and 2 workers, with annotations on its Cluster and MachineDeployment. */
async function quickstart(
  name: string,
  annotations: { cluster?: Record<string, string>; md: Record<string, string>; kcp?: Record<string, string> },
): Promise<ClusterModel> {
  const lines = (a: Record<string, string>) =>
    `  annotations:\n${Object.entries(a)
      .map(([k, v]) => `    ${k}: "${v}"\n`)
      .join('')}`;
  let text = (await readFile(join(root, 'examples/quickstart.yaml'), 'utf8')).replace(
    /(kind: MachineDeployment\nmetadata:\n)/,
    `$1${lines(annotations.md)}`,
  );
  if (annotations.cluster) text = text.replace(/(kind: Cluster\nmetadata:\n)/, `$1${lines(annotations.cluster)}`);
  if (annotations.kcp) text = text.replace(/(kind: KubeadmControlPlane\nmetadata:\n)/, `$1${lines(annotations.kcp)}`);
  const [model] = loadManifests([{ file: 'quickstart.yaml', text }], {
    CLUSTER_NAME: name,
    CONTROL_PLANE_MACHINE_COUNT: '1',
    WORKER_MACHINE_COUNT: '2',
  }) as [ClusterModel];
  return model;
}

/** Cluster rp, its MachineDeployment's and control plane's max age annotated. */
async function manifest(paused: boolean): Promise<ClusterModel> {
  const maxAged = { [machineMaxAgeAnnotation]: `${maxAge}s` };
  const model = await quickstart('rp', { md: maxAged, kcp: maxAged });
  assert.equal(model.machineDeployments[0]!.machineMaxAgeSeconds, maxAge, 'the annotation reached the model');
  assert.equal(model.controlPlane.machineMaxAgeSeconds, maxAge);
  return { ...model, paused };
}

/**
 * Until every machine of `before` is replaced by Running ones: samples the provider's machines and the owner's
 * records twice a second, as a rollout's bounds (maxSurge 1, maxUnavailable 0 for 2 replicas) would be checked.
 */
async function repaved(before: string[]): Promise<{ after: OwnerStatus; steps: Set<string> }> {
  const steps = new Set<string>();
  const after = await until('every machine older than the max age replaced', () => status(), {
    done: async (s) => {
      steps.add(s.step);
      const dirs = (await readdir(machinesDir(clusterDir('default', 'rp'))).catch(() => [] as string[])).filter((d) =>
        d.startsWith(`${MD}-`),
      );
      assert.ok(dirs.length <= 3, `at most replicas + maxSurge provider machines: ${dirs.join(', ')}`);
      const available = s.machines.filter((m) => !m.deleting && m.phase === 'Running').length;
      assert.ok(available >= 2, `never fewer than replicas - maxUnavailable running: ${describeRecords(s)}`);
      return (
        s.machines.length === 2 &&
        s.readyReplicas === 2 &&
        s.machines.every((m) => !before.includes(m.name) && m.phase === 'Running')
      );
    },
    timeoutMs: 240_000,
    intervalMs: 500,
    describe: describeRecords,
  });
  return { after, steps };
}

test(`a MachineDeployment and a control plane with ${machineMaxAgeAnnotation} ${maxAge}s replace their machines as they reach that age, within their rollout bounds, never while the cluster is paused`, async () => {
  await suite.client.apply([await manifest(false)]);
  const ready = await suite.client.waitForCluster('default', 'rp', () => undefined, 600_000);
  assert.equal(ready.phase, 'Provisioned', failedMachines(ready));
  const first = await status();
  const controlPlane = () => suite.client.ownerStatus('kubeadmcontrolplane', 'default', 'rp-control-plane');
  const firstControlPlane = names(await controlPlane());
  assert.equal(first.repave?.maxAgeSeconds, maxAge);
  const oldest = Math.min(...first.machines.map((m) => Date.parse(m.createdAt)));
  assert.equal(first.repave?.nextDueAt, new Date(oldest + maxAge * 1000).toISOString(), 'the soonest due time');
  const described = await runCapt({ TEMPORAL_ADDRESS: h.env.address }, 'describe', 'cluster', 'rp');
  for (const owner of ['KubeadmControlPlane/rp-control-plane', `MachineDeployment/${MD}`])
    assert.match(
      described.stdout,
      new RegExp(
        `Scheduled:\\n(.*\\n)*  ${owner}: repave: machines older than ${maxAge}s are replaced; the next is due at `,
      ),
    );

  // Paused before the first machines reach their age, the cluster replaces nothing once they are past it.
  await suite.client.apply([await manifest(true)]);
  await until('the MachineDeployment to hear of the pause', () => status(), {
    done: (s) => s.stepReason === 'ClusterPaused',
    timeoutMs: 60_000,
    describe: describeRecords,
  });
  // The control plane too: on a loaded host it heard of the pause later, and its machine was due meanwhile.
  await until('the control plane to hear of the pause', controlPlane, {
    done: (s) => s.stepReason === 'ClusterPaused',
    timeoutMs: 60_000,
    describe: describeRecords,
  });
  const dueAt = Date.parse(first.repave!.nextDueAt!);
  await sleep(Math.max(0, dueAt - Date.now()) + 5000);
  const stillHeld = await status();
  assert.deepEqual(names(stillHeld), names(first), `no machine replaced while paused: ${describeRecords(stillHeld)}`);
  assert.deepEqual(names(await controlPlane()), firstControlPlane, 'no control-plane machine either');

  // Unpaused, the machines past their age are replaced, a surge at a time, with no spec change.
  await suite.client.apply([await manifest(false)]);
  const { after: second, steps } = await repaved(names(first));
  assert.ok(
    [...steps].some((s) => s.includes(`repaving`) && s.includes(machineMaxAgeAnnotation)),
    `a step said why machines were replaced: ${[...steps].join(' | ')}`,
  );
  assert.equal(second.revision, first.revision, 'a repave makes no new revision');
  assert.ok(second.machines.every((m) => Date.parse(m.createdAt) >= oldest + maxAge * 1000));
  // The control plane's machine past its age is replaced as an outdated one: a new one joins, then it leaves.
  const repavedControlPlane = await until('the control-plane machine past its age replaced', controlPlane, {
    done: (s) => s.machines.length === 1 && s.readyReplicas === 1 && !firstControlPlane.includes(s.machines[0]!.name),
    timeoutMs: 180_000,
    describe: describeRecords,
  });
  assert.equal(repavedControlPlane.repave?.maxAgeSeconds, maxAge);

  await suite.client.deleteCluster('default', 'rp');
  await suite.client.waitForDeletion('default', 'rp', () => undefined, 300_000);
});

/** A daily UTC window from `fromMs` to `toMs` (within one day), to the second. */
const dailyWindow = (fromMs: number, toMs: number) =>
  `daily ${new Date(fromMs).toISOString().slice(11, 19)}-${new Date(toMs).toISOString().slice(11, 19)} UTC`;

test(`a MachineDeployment and a control plane held for their cluster's maintenance window replace machines only while the window is open (one 5 s wide, then one of two minutes); scaling does not wait`, async () => {
  const md = 'mw-md-0';
  // minReadySeconds 6: a surge machine counts as available only after the 5 s window below has closed.
  const withWindow = async (window: string) => {
    const model = await quickstart('mw', {
      cluster: { [maintenanceWindowAnnotation]: window },
      md: { [rolloutInWindowAnnotation]: 'true' },
      kcp: { [rolloutInWindowAnnotation]: 'true' },
    });
    return { ...model, machineDeployments: [{ ...model.machineDeployments[0]!, minReadySeconds: 6 }] };
  };
  const controlPlane = () => suite.client.ownerStatus('kubeadmcontrolplane', 'default', 'mw-control-plane');
  const far = Date.now() + 3 * 3600_000;
  await suite.client.apply([await withWindow(dailyWindow(far, far + 60_000))]);
  const ready = await suite.client.waitForCluster('default', 'mw', () => undefined, 600_000);
  assert.equal(ready.phase, 'Provisioned', failedMachines(ready));
  const before = names(await status(md));
  const controlPlaneBefore = names(await controlPlane());

  // A restart makes every machine one to replace: it waits, with the reason, the window and when it opens.
  await suite.client.rolloutRestart('machinedeployment', 'default', md);
  await suite.client.rolloutRestart('kubeadmcontrolplane', 'default', 'mw-control-plane');
  const controlPlaneWaiting = await until('the control plane to wait for the window', controlPlane, {
    done: (s) => s.stepReason === 'WaitingForMaintenanceWindow',
    timeoutMs: 60_000,
    describe: describeRecords,
  });
  assert.match(controlPlaneWaiting.step, /^1 machine\(s\) to replace wait for the maintenance window/);
  assert.equal(controlPlaneWaiting.maintenance?.open, false);
  const waiting = await until('the restart to wait for the window', () => status(md), {
    done: (s) => s.stepReason === 'WaitingForMaintenanceWindow',
    timeoutMs: 60_000,
    describe: describeRecords,
  });
  assert.match(
    waiting.step,
    /^2 machine\(s\) to replace wait for the maintenance window \(daily .* UTC\), which opens at /,
  );
  assert.deepEqual(
    [waiting.maintenance?.open, waiting.maintenance?.opensAt],
    [false, new Date(Math.floor(far / 1000) * 1000).toISOString()],
  );
  const described = await runCapt({ TEMPORAL_ADDRESS: h.env.address }, 'describe', 'cluster', 'mw');
  assert.match(
    described.stdout,
    /MachineDeployment\/mw-md-0: replaces machines only in the maintenance window daily .* UTC: closed; opens at /,
  );
  assert.match(
    described.stdout,
    /Cluster\/mw: maintenance window daily .* UTC; held for it: KubeadmControlPlane\/mw-control-plane, MachineDeployment\/mw-md-0/,
  );
  // Scaling applies at once, on the running template.
  await suite.client.scale('machinedeployment', 'default', md, 3);
  const scaled = await until('the scale-up while the rollout waits', () => status(md), {
    done: (s) => s.readyReplicas === 3 && s.machines.length === 3,
    timeoutMs: 120_000,
    describe: describeRecords,
  });
  assert.ok(
    before.every((n) => names(scaled).includes(n)),
    'no machine replaced',
  );

  // The window moves to open in 15 s for 5 s: nothing is replaced before it opens; in it one surge machine at most
  // is begun (maxSurge 1, and it is not available before the window closes), and nothing after it closes (a record's
  // createdAt is the owner's time when it decided to make the machine): the rest waits for the next day's window.
  const opens = Math.ceil((Date.now() + 15_000) / 1000) * 1000;
  const closes = opens + 5000;
  await suite.client.apply([await withWindow(dailyWindow(opens, closes))]);
  const held = names(scaled);
  await until('the new window to be known', () => status(md), {
    done: (s) => s.maintenance?.opensAt === new Date(opens).toISOString(),
    timeoutMs: 30_000,
    describe: describeRecords,
  });
  await sleep(Math.max(0, opens - Date.now() - 1000));
  assert.deepEqual(names(await status(md)), held, 'nothing replaced before the window opened');
  assert.deepEqual(names(await controlPlane()), controlPlaneBefore, 'no control-plane machine either');
  await sleep(Math.max(0, closes - Date.now()));
  // The owner wakes at the closing, asks again, and holds the rest for the next day's window.
  const afterWindow = await until("the rest to wait for the next day's window", () => status(md), {
    done: (s) =>
      s.stepReason === 'WaitingForMaintenanceWindow' &&
      s.maintenance?.opensAt === new Date(opens + 86_400_000).toISOString(),
    timeoutMs: 60_000,
    describe: describeRecords,
  });
  await sleep(3000);
  const held2 = await status(md);
  const made = held2.machines.filter((m) => !held.includes(m.name));
  assert.ok(made.length <= 1, `one surge machine at most: ${describeRecords(held2)}`);
  assert.ok(
    made.every((m) => Date.parse(m.createdAt) >= opens && Date.parse(m.createdAt) < closes),
    `every machine made while the window was open: ${describeRecords(held2)}`,
  );
  assert.deepEqual(names(held2), names(afterWindow), `nothing more once it closed: ${describeRecords(held2)}`);

  // A window open now for two minutes: the rest is replaced.
  const reopens = Math.ceil((Date.now() + 2000) / 1000) * 1000;
  await suite.client.apply([await withWindow(dailyWindow(reopens, reopens + 120_000))]);
  const inWindow = (createdAt: string) =>
    (Date.parse(createdAt) >= opens && Date.parse(createdAt) < closes) || Date.parse(createdAt) >= reopens;
  const done = await until('the restart rolled out in the windows', () => status(md), {
    done: (s) =>
      s.rolloutComplete &&
      s.readyReplicas === 3 &&
      s.machines.length === 3 &&
      s.machines.every((m) => !held.includes(m.name)),
    timeoutMs: 120_000,
    describe: describeRecords,
  });
  assert.ok(
    done.machines.every((m) => inWindow(m.createdAt)),
    `every new machine made while a window was open: ${describeRecords(done)}`,
  );
  const controlPlaneDone = await until('the control plane restarted in the windows', controlPlane, {
    done: (s) => s.machines.length === 1 && s.readyReplicas === 1 && !controlPlaneBefore.includes(s.machines[0]!.name),
    timeoutMs: 120_000,
    describe: describeRecords,
  });
  assert.ok(inWindow(controlPlaneDone.machines[0]!.createdAt), describeRecords(controlPlaneDone));

  await suite.client.deleteCluster('default', 'mw');
  await suite.client.waitForDeletion('default', 'mw', () => undefined, 300_000);
});
