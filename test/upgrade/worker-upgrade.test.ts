import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { promisify } from 'node:util';
import { loadManifests } from '../../src/api/load-manifests';
import type { ClusterModel } from '../../src/api/model';
import { failedMachines } from '../../src/client/capt-client';
import { describeCaptDeployment } from '../../src/client/worker-deployment';
import { upgradeWorkers, workerBuilds } from '../../src/client/worker-upgrade';
import type { OwnerStatus } from '../../src/contract/owner';
import {
  clusterWorkflowId,
  controlPlaneWorkflowId,
  machineDeploymentWorkflowId,
  machineWorkflowId,
} from '../../src/contract/workflow-ids';
import { availableKubernetesVersions } from '../../src/tools';
import { buildIdOf } from '../../src/worker/workflow-build';
import { harnessWithClient } from '../fixtures/machine-harness';
import { until } from '../fixtures/until';
import { PostgresTemporal } from '../fixtures/temporal';
import type { WorkerProcess } from '../fixtures/worker-process';

// Upgrade-on-continue-as-new needs Temporal 1.30 or newer: the production topology's server (1.32.1), not the dev server's 1.29.1.
const suite = harnessWithClient({ temporal: async () => (await PostgresTemporal.start()).env });
const h = suite.harness;
const run = promisify(execFile);
const root = join(__dirname, '../../..');
const [older, newer] = availableKubernetesVersions().slice(-2) as [string, string];
const MD = 'up-md-0';
let buildB: WorkerProcess | undefined;
after(() => buildB?.stop());

async function capt(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return run(process.execPath, [join(root, 'dist/src/cli/main.js'), ...args], {
    env: { ...process.env, TEMPORAL_ADDRESS: h.env.address },
  }).then(
    (r) => ({ code: 0, ...r }),
    (e: { code: number; stdout: string; stderr: string }) => e,
  );
}

/** Build B: build A's bundle with two texts changed, one a machine's and one a MachineDeployment's, so each run shows which code ran it. */
function changedBundle(code: string): string {
  const edits: [string, string][] = [
    ["setStep('Running', 'running')", "setStep('Running', 'running on build B')"],
    ['machines running (revision ${set.revision})', 'machines running on build B (revision ${set.revision})'],
  ];
  for (const [from, to] of edits) {
    assert.ok(code.includes(from), `build A's bundle has no "${from}" to change for build B`);
    code = code.replaceAll(from, to);
  }
  return code;
}

/** The build a run ran its last workflow task on. */
async function buildOf(workflowId: string, runId?: string): Promise<string | undefined> {
  const { raw } = await h.env.client.workflow.getHandle(workflowId, runId).describe();
  return raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId ?? undefined;
}

/** Every run of a workflow, oldest first, with its status and build. */
async function runsOf(workflowId: string): Promise<{ status: string; build?: string }[]> {
  const runs: { runId: string; status: string; start: number }[] = [];
  for await (const w of h.env.client.workflow.list({ query: `WorkflowId = '${workflowId}'` }))
    runs.push({ runId: w.runId, status: w.status.name, start: w.startTime.getTime() });
  runs.sort((a, b) => a.start - b.start);
  return Promise.all(runs.map(async (r) => ({ status: r.status, build: await buildOf(workflowId, r.runId) })));
}

const status = () => suite.client.ownerStatus('machinedeployment', 'default', MD);

test('workers upgraded mid-rollout: machines started on build A finish on A, new ones and the owners run on B, the rollout completes; bad input is refused and changes nothing', async () => {
  const codeA = await readFile(h.bundlePath, 'utf8');
  const bundleB = join(h.home, 'workflow-bundle-b.js');
  await writeFile(bundleB, changedBundle(codeA));
  const [a, b] = [buildIdOf(codeA), buildIdOf(await readFile(bundleB, 'utf8'))];
  assert.notEqual(a, b);
  assert.match(
    h.worker!.output(),
    new RegExp(`capt worker ready: build ${a} \\(the current build\\)`),
    'the first worker made its own build current',
  );

  const text = await readFile(join(root, 'examples/quickstart.yaml'), 'utf8');
  const [model] = loadManifests([{ file: 'quickstart.yaml', text }], {
    CLUSTER_NAME: 'up',
    CONTROL_PLANE_MACHINE_COUNT: '1',
    WORKER_MACHINE_COUNT: '2',
    KUBERNETES_VERSION: newer,
  }) as [ClusterModel];
  const md = model.machineDeployments[0]!;
  await suite.client.apply([
    { ...model, machineDeployments: [{ ...md, template: { ...md.template, version: older } }] },
  ]);
  const ready = await suite.client.waitForCluster('default', 'up', () => undefined, 600_000);
  assert.equal(ready.phase, 'Provisioned', failedMachines(ready));
  const oldMachines = (await status()).machines.map((m) => m.name);

  // Build B's workers join the deployment without taking anything over; a ramp of 0% routes nothing to them.
  buildB = await h.spawnWorker({ bundlePath: bundleB });
  assert.match(
    buildB.output(),
    new RegExp(
      `build ${b} \\(not current: new workflows run on ${a}; \`capt upgrade workers ${b}\` makes it current\\)`,
    ),
  );
  const ramp = await capt('upgrade', 'workers', b, '--ramp', '0');
  assert.equal(ramp.code, 0, ramp.stderr);
  assert.match(ramp.stdout, new RegExp(`build ${b} is ramping: 0%`));
  assert.match((await capt('worker', 'status')).stdout, new RegExp(`${b}\\s+ramping 0%`));

  // The rollout starts on A; B becomes current once its first new machine exists. New workers boot for 20 s, and
  // the rollout is paused across the upgrade, so its next machine comes after it (an upgrade on a loaded host once
  // outlasted the boot, and the next machine started during it).
  const slowBoot = {
    ...md.template,
    infrastructure: {
      ...md.template.infrastructure,
      spec: { ...md.template.infrastructure.spec, bootDelaySeconds: 20 },
    },
  };
  await suite.client.apply([{ ...model, machineDeployments: [{ ...md, template: slowBoot }] }]);
  const firstNew = await until("the rollout's first new machine", status, {
    done: (s) => s.machines.some((m) => !oldMachines.includes(m.name)),
  });
  const startedOnA = firstNew.machines.filter((m) => !oldMachines.includes(m.name)).map((m) => m.name);
  await suite.client.rolloutPause('machinedeployment', 'default', MD, true);
  const upgrade = await capt('upgrade', 'workers', b);
  assert.equal(upgrade.code, 0, upgrade.stderr);
  console.log(upgrade.stdout);
  assert.match(upgrade.stdout, new RegExp(`build ${b} is the current build \\(before: ${a}\\)`));
  assert.match(upgrade.stdout, new RegExp(`[1-9]\\d* owner workflow\\(s\\) of ${a} told`));
  // Machines the owner added while the upgrade went on may have started on either build; any added after it, on B.
  const duringUpgrade = (await status()).machines.map((m) => m.name).filter((n) => !oldMachines.includes(n));
  await suite.client.rolloutPause('machinedeployment', 'default', MD, false);

  // The rollout completes on B's MachineDeployment code, within the quickstart's bounds (maxSurge 1, maxUnavailable 0) throughout.
  const bounds = { most: 0, leastAvailable: Infinity };
  const done = await until('the rollout to complete', status, {
    done: (s: OwnerStatus) => {
      bounds.most = Math.max(bounds.most, s.machines.length);
      bounds.leastAvailable = Math.min(bounds.leastAvailable, s.availableReplicas);
      return (
        !!s.rolloutComplete &&
        s.machines.length === 2 &&
        s.machines.every((m) => m.version === newer && m.phase === 'Running')
      );
    },
    timeoutMs: 420_000,
  });
  assert.ok(
    bounds.most <= 3 && bounds.leastAvailable >= 2,
    `never more than 2 + maxSurge 1 machines, never fewer than 2 - maxUnavailable 0 available: ${JSON.stringify(bounds)}`,
  );
  assert.match(done.step, /machines running on build B/);
  const deployment = await describeCaptDeployment(h.env.client.workflowService, 'default');
  assert.equal(deployment?.current, b);
  assert.equal(deployment?.ramping, undefined, 'B was ramping: making it current ends the ramp');

  // Machines started on A finished their work on A: the ones the rollout replaced were deleted there, the first new one runs there.
  // A machine reports its deletion to its owner just before its workflow completes: the owner may be done first.
  for (const name of oldMachines) {
    const runs = await until(`${name}'s workflow to complete`, () => runsOf(machineWorkflowId('default', name)), {
      done: (r) => r.every((run) => run.status !== 'RUNNING'),
      timeoutMs: 60_000,
    });
    assert.deepEqual(runs, [{ status: 'COMPLETED', build: a }], `${name} was deleted on A`);
  }
  for (const name of startedOnA)
    assert.equal(await buildOf(machineWorkflowId('default', name)), a, `${name} started on A`);
  const startedOnB = done.machines.map((m) => m.name).filter((n) => !duringUpgrade.includes(n));
  assert.ok(startedOnB.length > 0, 'the rollout created a machine after the upgrade');
  for (const name of startedOnB)
    assert.equal(await buildOf(machineWorkflowId('default', name)), b, `${name} started on B`);
  // Each new machine runs the code of the build it started on.
  const onA: string[] = [];
  for (const name of done.machines.map((m) => m.name)) {
    const build = await buildOf(machineWorkflowId('default', name));
    if (build === a) onA.push(name);
    assert.equal(
      (await suite.client.machineStatuses('default', [name]))[0]?.step,
      build === a ? 'running' : 'running on build B',
      `${name} on ${build}`,
    );
  }

  // The owners moved at the continue-as-new the upgrade's message set off: the first run on A, the running one on B.
  for (const id of [
    machineDeploymentWorkflowId('default', MD),
    controlPlaneWorkflowId('default', 'up-control-plane'),
    clusterWorkflowId('default', 'up'),
  ]) {
    const runs = await until(`${id} to run on ${b}`, () => runsOf(id), {
      done: (r) => r.at(-1)?.build === b,
      timeoutMs: 60_000,
    });
    assert.deepEqual([runs[0]!.build, runs.at(-1)!.status], [a, 'RUNNING'], id);
    assert.ok(
      runs.slice(0, -1).every((r) => r.status === 'CONTINUED_AS_NEW'),
      `${id}: ${JSON.stringify(runs)}`,
    );
  }

  // What still runs on A: the machines started there (the control plane's and the rollout's first), nothing else.
  const builds = await until(`only machines left on ${a}`, () => workerBuilds(h.env.client), {
    done: (w) => w.builds.find((x) => x.buildId === a)?.running === onA.length + 1,
    timeoutMs: 60_000,
  });
  assert.deepEqual(builds.builds.find((x) => x.buildId === a)?.byKind, { Machine: onA.length + 1 });
  console.log((await capt('worker', 'status')).stdout);

  // Bad input: a build no worker polls, a ramp out of range; the routing stays as it was.
  await assert.rejects(
    upgradeWorkers(h.env.client, { buildId: 'no-such-build', waitMs: 1000 }),
    /no capt worker of build no-such-build has polled Temporal \(builds known: .*\); start `capt worker` of that build first/,
  );
  const badRamp = await capt('upgrade', 'workers', a, '--ramp', '150');
  assert.deepEqual([badRamp.code, badRamp.stderr.trim()], [2, 'error: --ramp 150: a percentage from 0 to 100']);
  assert.equal((await describeCaptDeployment(h.env.client.workflowService, 'default'))?.current, b);
  await buildB.stop();
});
