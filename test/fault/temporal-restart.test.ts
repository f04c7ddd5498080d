import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { clusterDir, machinesDir } from '../../providers/local/layout';
import { loadManifests } from '../../src/api/load-manifests';
import type { ClusterModel } from '../../src/api/model';
import { failedMachines } from '../../src/client/capt-client';
import { clusterSecretRefs } from '../../activities/bootstrap/cluster-secrets';
import { KubeClient } from '../../src/kube/kube-client';
import { getSecret } from '../../src/secrets/secret-store';
import type { ClusterView } from '../../src/contract/cluster';
import { harnessWithClient } from '../fixtures/machine-harness';
import { processesMentioning } from '../fixtures/leaks';
import { startRestartableTemporal, type RestartableTemporal } from '../fixtures/temporal';

// The Temporal server (CAPT_TEST_TEMPORAL: the production topology, or the dev server on its SQLite file)
// is SIGKILLed and started again while capt creates a cluster and while it rolls a MachineDeployment;
// each completes with exactly the machines asked for.
let temporal: RestartableTemporal;
const suite = harnessWithClient({ temporal: async () => (temporal = await startRestartableTemporal()).env });
const h = suite.harness;
const CLUSTER = 'rs';
const MD = `${CLUSTER}-md-0`;
const downMs = 3000;
const restarts: string[] = [];

/** Kills the server, leaves it down for `downMs`, starts it again; records how long until it answered. */
async function restartServer(when: string): Promise<void> {
  await temporal.killServer();
  await sleep(downMs);
  const started = Date.now();
  await temporal.startServer();
  restarts.push(`${when}: down ${downMs / 1000} s, back in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

async function until(predicate: (s: ClusterView) => boolean, what: string, timeoutMs = 300_000, pollMs = 200): Promise<ClusterView> {
  let last: ClusterView | undefined;
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await sleep(pollMs)) {
    last = await suite.client.clusterStatus('default', CLUSTER).catch(() => last);
    if (last && predicate(last)) return last;
  }
  throw new Error(`timed out waiting for ${what}: ${last?.step}`);
}

/** Machines as the provider, Kubernetes and Temporal each hold them: the same names, once each. */
async function machinesEverywhere(kube: KubeClient): Promise<{ provider: string[]; nodes: string[]; workflows: string[] }> {
  const provider = (await readdir(machinesDir(clusterDir('default', CLUSTER))).catch(() => [] as string[])).sort();
  const nodes = (await kube.listNodes()).map((n) => n.metadata!.name!).sort();
  const workflows: string[] = [];
  const query = `CaptKind = "Machine" AND CaptCluster = "${CLUSTER}" AND ExecutionStatus = "Running"`;
  for await (const wf of h.env.client.workflow.list({ query })) workflows.push(wf.workflowId.replace('machine/default/', ''));
  return { provider, nodes, workflows: workflows.sort() };
}

/** Waits until provider, Nodes and running machine workflows agree on `count` machines (visibility lags a little). */
async function assertMachines(kube: KubeClient, count: number, what: string): Promise<string[]> {
  let last = { provider: [] as string[], nodes: [] as string[], workflows: [] as string[] };
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; await sleep(500)) {
    last = await machinesEverywhere(kube);
    if (last.provider.length === count && JSON.stringify(last.provider) === JSON.stringify(last.nodes) && JSON.stringify(last.nodes) === JSON.stringify(last.workflows)) return last.provider;
  }
  assert.fail(`${what}: expected ${count} machines, each once, in the provider, as Nodes and as running workflows; got ${JSON.stringify(last)}`);
}

function clusterModel(): ClusterModel {
  const text = readFileSync(join(__dirname, '../../../examples/quickstart.yaml'), 'utf8');
  const [model] = loadManifests([{ file: 'quickstart.yaml', text }], { CLUSTER_NAME: CLUSTER, CONTROL_PLANE_MACHINE_COUNT: '1', WORKER_MACHINE_COUNT: '2' });
  const md = model!.machineDeployments[0]!;
  // Workers boot for a few seconds, so a kill lands while they are being created.
  const template = { ...md.template, infrastructure: { ...md.template.infrastructure, spec: { bootDelaySeconds: 4 } } };
  return { ...model!, machineDeployments: [{ ...md, template }] };
}

test('the Temporal server SIGKILLed mid-create (control plane, then workers) and mid-rollout: each completes with the machines asked for, none twice, none left after delete', async () => {
  const created = Date.now();
  await suite.client.apply([clusterModel()]);
  await until((s) => (s.controlPlane?.machines.length ?? 0) >= 1, 'the control-plane machine');
  await restartServer('create, control-plane machine provisioning');
  await until((s) => s.machineDeployments.some((md) => md.machines.length >= 1 && md.readyReplicas < 2), 'the workers being created');
  await restartServer('create, workers provisioning');
  const ready = await suite.client.waitForCluster('default', CLUSTER, () => undefined, 600_000);
  assert.equal(ready.phase, 'Provisioned', failedMachines(ready));
  console.log(`create with two server kills: ${((Date.now() - created) / 1000).toFixed(1)} s`);

  const kube = new KubeClient(await getSecret(clusterSecretRefs('default', CLUSTER).adminKubeconfig));
  const before = await assertMachines(kube, 3, 'after create');

  const rollout = Date.now();
  const { revision } = await suite.client.ownerStatus('machinedeployment', 'default', MD);
  await suite.client.rolloutRestart('machinedeployment', 'default', MD);
  // The longest stretch in which none of the MachineDeployment's machines changed name, phase or deletion,
  // the server's kill and restart included.
  let longestPauseMs = 0;
  let lastChange = Date.now();
  let lastMachines = '';
  let killed = false;
  let md = await suite.client.ownerStatus('machinedeployment', 'default', MD);
  for (const deadline = Date.now() + 420_000; !(md.rolloutComplete && md.revision > revision && md.machines.every((m) => m.phase === 'Running' && !before.includes(m.name))); await sleep(200)) {
    if (Date.now() > deadline) assert.fail(`the rollout did not complete: ${md.step}`);
    md = await suite.client.ownerStatus('machinedeployment', 'default', MD).catch(() => md);
    const machines = JSON.stringify(md.machines.map((m) => [m.name, m.phase, m.deleting]));
    if (machines !== lastMachines) [lastMachines, lastChange] = [machines, Date.now()];
    longestPauseMs = Math.max(longestPauseMs, Date.now() - lastChange);
    if (!killed && md.machines.some((m) => !before.includes(m.name) && m.phase !== 'Running')) {
      killed = true;
      await restartServer('rollout, new worker provisioning');
    }
  }
  assert.ok(killed, 'the server was killed while a new worker was provisioning');
  console.log(`rollout of 2 with a server kill: ${((Date.now() - rollout) / 1000).toFixed(1)} s; longest pause between two changes of its machines: ${(longestPauseMs / 1000).toFixed(1)} s`);
  const after = await assertMachines(kube, 3, 'after the rollout');
  assert.deepEqual(after.filter((name) => before.includes(name)), before.filter((name) => !name.startsWith(MD)), 'every worker replaced, the control plane kept');

  await suite.client.deleteCluster('default', CLUSTER);
  await suite.client.waitForDeletion('default', CLUSTER, () => undefined, 300_000);
  assert.equal(existsSync(clusterDir('default', CLUSTER)), false, 'no machine left with the provider');
  assert.deepEqual(await processesMentioning([`${clusterDir('default', CLUSTER)}/`]), [], 'no process left');
  for (const line of restarts) console.log(`restart during ${line}`);
});
