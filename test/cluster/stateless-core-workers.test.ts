import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { clusterDir, machinesDir } from '../../providers/local/layout';
import { loadManifests } from '../../src/api/load-manifests';
import { failedMachines } from '../../src/client/capt-client';
import { KubeClient } from '../../src/kube/kube-client';
import { queryClusterSecrets } from '../../src/secrets/cluster-secrets';
import { payloadText, pemBody } from '../fixtures/history-guard';
import { processesMentioning } from '../fixtures/leaks';
import { harnessWithClient } from '../fixtures/machine-harness';
import type { WorkerProcess } from '../fixtures/worker-process';

const root = join(__dirname, '../../..');
const suite = harnessWithClient({ worker: false });
const h = suite.harness;
const CLUSTER = 'sl';
const MD = `${CLUSTER}-md-0`;
const workers: WorkerProcess[] = [];
const homes: string[] = [];

after(async () => {
  for (const w of workers) await w.stop();
  for (const home of homes) await rm(home, { recursive: true, force: true });
});

/** A core worker on what would be another host: a CAPT_HOME of its own, no provider. */
async function coreWorker(): Promise<{ worker: WorkerProcess; home: string }> {
  const home = await mkdtemp(join(tmpdir(), 'capt-core-home-'));
  homes.push(home);
  const worker = await h.spawnWorker({ serves: 'core', home });
  workers.push(worker);
  return { worker, home };
}

const times = (text: string, needle: string) => text.split(needle).length - 1;

/**
 * Where the secrets travel (in plaintext until the payload codec encrypts them): a few times per run in the
 * cluster workflow's history whatever the machine count, and never in its owners' or its machines' (a machine's
 * provisioning call renders its user-data from the cluster's secrets, so neither the token nor a CA key is in it).
 */
async function assertSecretsBounded(): Promise<void> {
  const { secrets } = await queryClusterSecrets(h.env.client, 'default', CLUSTER);
  const caKey = pemBody(secrets.ca.key);
  let inCluster = 0;
  for await (const run of h.env.client.workflow.list()) {
    const text = await payloadText(h.env.client.workflow.getHandle(run.workflowId, run.runId));
    const [tokens, caKeys] = [times(text, secrets.bootstrapToken), times(text, caKey)];
    const seen = `${run.workflowId} (run ${run.runId}): token ${tokens}, CA key ${caKeys}`;
    if (run.workflowId.startsWith('cluster/')) {
      inCluster += tokens;
      assert.ok(tokens <= 3 && caKeys <= 3, `created once, then carried by continue-as-new: ${seen}`);
    } else assert.equal(tokens + caKeys, 0, seen);
  }
  // The search finds what is there: the cluster's histories hold the secrets it keeps.
  assert.ok(inCluster > 0, 'the token is in the cluster workflow that keeps it');
}

const providerMachines = async () =>
  (await readdir(machinesDir(clusterDir('default', CLUSTER))).catch(() => [] as string[])).length;

test('two core workers with separate CAPT_HOMEs and a provider worker serve one cluster: created on A, then with A gone B alone scales it (new machines bootstrap), issues a kubeconfig and deletes it; neither home holds anything', async () => {
  // The local provider's worker on the machines' host (the harness's home), and core worker A.
  workers.push(await h.spawnWorker({ serves: 'local' }));
  const a = await coreWorker();

  const text = await readFile(join(root, 'examples/quickstart.yaml'), 'utf8');
  const [model] = loadManifests([{ file: 'quickstart.yaml', text }], {
    CLUSTER_NAME: CLUSTER,
    CONTROL_PLANE_MACHINE_COUNT: '1',
    WORKER_MACHINE_COUNT: '1',
  });
  await suite.client.apply([model!]);
  const ready = await suite.client.waitForCluster('default', CLUSTER, () => undefined, 600_000);
  assert.equal(ready.phase, 'Provisioned', failedMachines(ready));

  // A host lost: its worker killed, its disk unreachable.
  a.worker.child.kill('SIGKILL');
  await a.worker.exited;
  assert.deepEqual(await readdir(a.home), [], 'core worker A wrote nothing to its CAPT_HOME');
  await rm(a.home, { recursive: true, force: true });
  const b = await coreWorker();

  // New machines need the bootstrap token (workers) and the admin kubeconfig (their Nodes): B reads both from the cluster workflow.
  await suite.client.scale('machinedeployment', 'default', MD, 3);
  for (
    let s = await suite.client.ownerStatus('machinedeployment', 'default', MD);
    s.readyReplicas !== 3 || s.machines.length !== 3;
    s = await suite.client.ownerStatus('machinedeployment', 'default', MD)
  ) {
    assert.equal(s.failedMachines, 0, `no machine fails: ${s.step}`);
    await sleep(1000);
  }
  assert.equal(await providerMachines(), 4, 'one control-plane and three worker machines on the provider host');

  const kube = new KubeClient(await suite.client.kubeconfig('default', CLUSTER));
  let readyNodes = 0;
  for (const deadline = Date.now() + 120_000; readyNodes !== 4 && Date.now() < deadline; await sleep(1000)) {
    readyNodes = (await kube.listNodes()).filter((n) =>
      n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
    ).length;
  }
  assert.equal(readyNodes, 4, 'the kubeconfig B issued reaches four Ready Nodes');
  await assertSecretsBounded();

  await suite.client.deleteCluster('default', CLUSTER);
  await suite.client.waitForDeletion('default', CLUSTER, () => undefined, 300_000);
  assert.equal(existsSync(clusterDir('default', CLUSTER)), false, 'the provider host keeps nothing of the cluster');
  assert.deepEqual(
    await processesMentioning([clusterDir('default', CLUSTER)]),
    [],
    'no process of the cluster is left',
  );
  assert.deepEqual(await readdir(b.home), [], 'core worker B wrote nothing to its CAPT_HOME');
});
