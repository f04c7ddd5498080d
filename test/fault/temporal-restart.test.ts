import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { failedMachines } from '../../src/client/capt-client';
import { KubeClient } from '../../src/kube/kube-client';
import type { ClusterModel } from '../../src/api/model';
import { availableKubernetesVersions } from '../../src/tools';
import type { ClusterView } from '../../src/contract/cluster';
import type { MachineRecord } from '../../src/contract/owner';
import { harnessWithClient } from '../fixtures/machine-harness';
import { assertClusterGone, assertMachines as assertAgreement, quickstartModel } from '../fixtures/cluster-agreement';
import { readyzProbe } from '../fixtures/readyz-probe';
import { assertNoSecrets, storedHistories } from '../fixtures/secret-scan';
import { queryClusterSecrets } from '../../src/secrets/cluster-secrets';
import { clusterWorkflowId } from '../../src/contract/workflow-ids';
import { until } from '../fixtures/until';
import { PostgresTemporal, startRestartableTemporal, type RestartableTemporal } from '../fixtures/temporal';

// The Temporal server (CAPT_TEST_TEMPORAL: the production topology, or the dev server on its SQLite file)
// is SIGKILLed and started again while capt creates a cluster, rolls a MachineDeployment and upgrades the
// control plane (PostgreSQL too, mid-rollout, on the topology); each completes with exactly the machines
// asked for, and the control-plane endpoint answers throughout the upgrade.
let temporal: RestartableTemporal;
// The worker logs at info, so the secret scan at the end reads what an operator's log would hold.
const suite = harnessWithClient({
  temporal: async () => (temporal = await startRestartableTemporal()).env,
  logLevel: 'info',
});
const h = suite.harness;
const CLUSTER = 'rs';
const MD = `${CLUSTER}-md-0`;
const downMs = 3000;
const restarts: string[] = [];

/**
 * Kills the server, leaves it down for `downMs`, starts it again; records how long until it answered.
 * Returns when the server was gone.
 */
async function restartServer(when: string): Promise<number> {
  await temporal.killServer();
  const killedAt = Date.now();
  await sleep(downMs);
  const started = Date.now();
  await temporal.startServer();
  restarts.push(`${when}: down ${downMs / 1000} s, back in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return killedAt;
}

/**
 * The kill at `killedAt` landed before `what` was done: one of `machines` was first seen Running after it
 * (an owner's clock is the server's, which was down from then on).
 */
function assertKilledMidway(machines: MachineRecord[], killedAt: number, what: string): void {
  const last = Math.max(...machines.map((m) => Date.parse(m.runningSince ?? '')));
  assert.ok(
    last > killedAt,
    `the server was killed while ${what}, not after: killed at ${new Date(killedAt).toISOString()}, machines Running since ${machines.map((m) => `${m.name} ${m.runningSince}`).join(', ')}`,
  );
}

/** SIGKILLs PostgreSQL under the running Temporal server and starts it again (crash recovery); records the timing. */
async function restartDatabase(database: PostgresTemporal, when: string): Promise<void> {
  await database.killDatabase();
  await sleep(downMs);
  const started = Date.now();
  await database.startServer();
  restarts.push(
    `${when} (PostgreSQL): down ${downMs / 1000} s, back in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
}

/**
 * Upgrades the one control-plane machine to `newer`, killing the server while the new machine is on its way;
 * /readyz through the endpoint must answer throughout. Returns the new machine's name.
 */
async function upgradeControlPlaneWithServerKill(model: ClusterModel, endpoint: string): Promise<string> {
  const probe = readyzProbe(endpoint);
  const started = Date.now();
  let availability: Awaited<ReturnType<typeof probe.stop>>;
  let final: ClusterView;
  let killedAt: number;
  try {
    await suite.client.apply([{ ...model, controlPlane: { ...model.controlPlane, version: newer } }]);
    await untilCluster(
      (s) => s.controlPlane!.machines.some((m) => m.version === newer && m.phase !== 'Running'),
      'the new control-plane machine on its way',
    );
    killedAt = await restartServer('control-plane upgrade, new machine provisioning');
    final = await untilCluster(
      (s) => {
        const cp = s.controlPlane!;
        return (
          cp.machines.length === 1 &&
          cp.machines[0]!.version === newer &&
          cp.machines[0]!.phase === 'Running' &&
          cp.updatedReplicas === 1 &&
          s.pending.length === 0
        );
      },
      `the control plane on ${newer}`,
      600_000,
    );
  } finally {
    availability = await probe.stop();
  }
  assertKilledMidway(final.controlPlane!.machines, killedAt, 'the new control-plane machine was provisioning');
  console.log(
    `control-plane upgrade ${older} -> ${newer} with a server kill: ${((Date.now() - started) / 1000).toFixed(1)} s; ${availability.probes} readyz probes, ${availability.failures} failed, worst gap ${availability.worstGapMs} ms`,
  );
  assert.equal(
    availability.failures,
    0,
    `no readyz probe through the endpoint failed (${availability.failures} of ${availability.probes}: ${availability.reasons.join(' | ')})`,
  );
  return final.controlPlane!.machines[0]!.name;
}

/** Polls the cluster's status until `done` holds of it; a read during the server's restart fails and is retried. */
const untilCluster = (done: (s: ClusterView) => boolean, what: string, timeoutMs?: number) =>
  until(what, () => suite.client.clusterStatus('default', CLUSTER), {
    done,
    timeoutMs,
    intervalMs: 200,
    describe: (last) => `${last?.step}`,
  });

const [older, newer] = availableKubernetesVersions().slice(-2) as [string, string];
const clusterModel = () =>
  quickstartModel(
    CLUSTER,
    { CONTROL_PLANE_MACHINE_COUNT: '1', WORKER_MACHINE_COUNT: '2', KUBERNETES_VERSION: older },
    4,
  );
const assertMachines = (kube: KubeClient, count: number, what: string) =>
  assertAgreement(h.env.client, kube, 'default', CLUSTER, count, what);

test('the Temporal server SIGKILLed mid-create (control plane, then workers), mid-rollout and mid-upgrade: each completes with the machines asked for, none twice, the endpoint always answering, none left after delete', async () => {
  const created = Date.now();
  const model = clusterModel();
  await suite.client.apply([model]);
  // Each kill waits for a machine on its way, which cannot be Running by the time the kill lands.
  await untilCluster(
    (s) => s.controlPlane?.machines.some((m) => m.phase !== 'Running') ?? false,
    'the control-plane machine on its way',
  );
  const controlPlaneKilledAt = await restartServer('create, control-plane machine provisioning');
  await untilCluster(
    (s) => s.machineDeployments.some((md) => md.machines.some((m) => m.phase !== 'Running')),
    'the workers being created',
  );
  const workersKilledAt = await restartServer('create, workers provisioning');
  const ready = await suite.client.waitForCluster('default', CLUSTER, () => undefined, 600_000);
  assert.equal(ready.phase, 'Provisioned', failedMachines(ready));
  assertKilledMidway(ready.controlPlane!.machines, controlPlaneKilledAt, 'the control-plane machine was provisioning');
  assertKilledMidway(ready.machineDeployments[0]!.machines, workersKilledAt, 'the workers were provisioning');
  console.log(`create with two server kills: ${((Date.now() - created) / 1000).toFixed(1)} s`);

  const kube = new KubeClient(await suite.client.kubeconfig('default', CLUSTER));
  const before = await assertMachines(kube, 3, 'after create');

  const rollout = Date.now();
  const { revision } = await suite.client.ownerStatus('machinedeployment', 'default', MD);
  await suite.client.rolloutRestart('machinedeployment', 'default', MD);
  // The longest stretch in which none of the MachineDeployment's machines changed name, phase or deletion,
  // the server's kill and restart included.
  let longestPauseMs = 0;
  let lastChange = Date.now();
  let lastMachines = '';
  let killedAt: number | undefined;
  // On the topology, PostgreSQL is SIGKILLed too, once the second new worker is on its way.
  const database = temporal instanceof PostgresTemporal ? temporal : undefined;
  let databaseKilled = false;
  let md = await suite.client.ownerStatus('machinedeployment', 'default', MD);
  for (
    const deadline = Date.now() + 420_000;
    !(
      md.rolloutComplete &&
      md.revision > revision &&
      md.machines.every((m) => m.phase === 'Running' && !before.includes(m.name))
    );
    await sleep(200)
  ) {
    if (Date.now() > deadline) assert.fail(`the rollout did not complete: ${md.step}`);
    md = await suite.client.ownerStatus('machinedeployment', 'default', MD).catch(() => md);
    const machines = JSON.stringify(md.machines.map((m) => [m.name, m.phase, m.deleting]));
    if (machines !== lastMachines) [lastMachines, lastChange] = [machines, Date.now()];
    longestPauseMs = Math.max(longestPauseMs, Date.now() - lastChange);
    if (!killedAt && md.machines.some((m) => !before.includes(m.name) && m.phase !== 'Running'))
      killedAt = await restartServer('rollout, new worker provisioning');
    const added = md.machines.filter((m) => !before.includes(m.name));
    if (database && killedAt && !databaseKilled && added.length >= 2 && added.some((m) => m.phase !== 'Running')) {
      databaseKilled = true;
      await restartDatabase(database, 'rollout, second new worker provisioning');
    }
  }
  assert.ok(killedAt, 'the server was killed while a new worker was provisioning');
  assertKilledMidway(md.machines, killedAt, 'a new worker was provisioning');
  if (database) assert.ok(databaseKilled, 'PostgreSQL was killed while the second new worker was provisioning');
  console.log(
    `rollout of 2 with a server kill: ${((Date.now() - rollout) / 1000).toFixed(1)} s; longest pause between two changes of its machines: ${(longestPauseMs / 1000).toFixed(1)} s`,
  );
  const after = await assertMachines(kube, 3, 'after the rollout');
  assert.deepEqual(
    after.filter((name) => before.includes(name)),
    before.filter((name) => !name.startsWith(MD)),
    'every worker replaced, the control plane kept',
  );

  const upgraded = await upgradeControlPlaneWithServerKill(model, ready.endpoint);
  await assertMachines(kube, 3, 'after the upgrade');
  assert.ok(!after.includes(upgraded), 'the control-plane machine was replaced');

  const { secrets } = await queryClusterSecrets(suite.client.client, 'default', CLUSTER);
  await suite.client.deleteCluster('default', CLUSTER);
  await suite.client.waitForDeletion('default', CLUSTER, () => undefined, 300_000);
  // Everything Temporal kept of create, rollout, upgrade and delete, read without the codec, and the worker's log.
  const clusterHandle = h.env.client.workflow.getHandle(clusterWorkflowId('default', CLUSTER));
  const stored = await storedHistories(h.env.client, h.env.address);
  await assertNoSecrets(
    stored.text,
    `${stored.runs} workflow histories read with the temporal CLI`,
    secrets,
    clusterHandle,
  );
  await assertNoSecrets(h.worker!.output(), "the worker's log", secrets, clusterHandle);
  console.log(
    `secret scan: ${stored.runs} histories (${(stored.text.length / 1024).toFixed(0)} KiB) and ${(h.worker!.output().length / 1024).toFixed(0)} KiB of worker log, no secret in plaintext`,
  );
  await assertClusterGone(h.env.client, 'default', CLUSTER);
  for (const line of restarts) console.log(`restart during ${line}`);
});
