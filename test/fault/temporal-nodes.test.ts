import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { failedMachines } from '../../src/client/capt-client';
import type { ClusterView } from '../../src/contract/cluster';
import { coLocatedGoMaxProcs } from '../../src/dev/co-located-go-procs';
import { temporalNodeProcess } from '../../src/dev/postgres-topology';
import { KubeClient } from '../../src/kube/kube-client';
import { availableKubernetesVersions } from '../../src/tools';
import { runningPid } from '../../src/util/processes';
import { assertClusterGone, assertMachines as assertAgreement, quickstartModel } from '../fixtures/cluster-agreement';
import { harnessWithClient } from '../fixtures/machine-harness';
import { readyzProbe } from '../fixtures/readyz-probe';
import { startTemporalCluster, type PostgresTemporal } from '../fixtures/temporal';
import { until } from '../fixtures/until';
import type { WorkerProcess } from '../fixtures/worker-process';

// Temporal as a cluster of three server processes (every service in each) on one PostgreSQL, behind capt's
// frontend proxy, as `capt dev start --persistence postgres --temporal-nodes 3` runs it. One node is SIGKILLed
// while a MachineDeployment rolls out, another while the control plane upgrades: the survivors take over the
// dead node's history shards and task queues, each operation completes with exactly the machines asked for, and
// the control-plane endpoint answers throughout. The workflows run on two core workers with CAPT_HOMEs of their own,
// as on two hosts, beside the local provider's worker on the machines' host.
let temporal: PostgresTemporal;
const suite = harnessWithClient({
  worker: false,
  temporal: async () => (temporal = await startTemporalCluster(3)).env,
});
const h = suite.harness;
const workers: WorkerProcess[] = [];
const homes: string[] = [];

/** The local provider's worker on the machines' host, and two core workers with CAPT_HOMEs of their own. */
async function startWorkers(): Promise<void> {
  workers.push(await h.spawnWorker({ serves: 'local' }));
  for (let i = 0; i < 2; i++) {
    const home = await mkdtemp(join(tmpdir(), 'capt-core-home-'));
    homes.push(home);
    workers.push(await h.spawnWorker({ serves: 'core', home }));
  }
}
after(async () => {
  for (const w of workers) await w.stop();
  for (const home of homes) await rm(home, { recursive: true, force: true });
});
const CLUSTER = 'tn';
const MD = `${CLUSTER}-md-0`;
const [older, newer] = availableKubernetesVersions().slice(-2) as [string, string];

const untilCluster = (done: (s: ClusterView) => boolean, what: string, timeoutMs = 600_000) =>
  until(what, () => suite.client.clusterStatus('default', CLUSTER), {
    done,
    timeoutMs,
    intervalMs: 200,
    describe: (last) => `${last?.step}`,
  });

test('a Temporal node SIGKILLed mid-rollout and another mid-upgrade: both complete with the machines asked for, none twice, the endpoint always answering, none left after delete', async () => {
  // Three nodes on this host's cores: each Go runtime gets its share of them, not all of them.
  for (const node of [1, 2, 3]) {
    const pid = await runningPid(temporal.stateDir, temporalNodeProcess(node));
    const environ = (await readFile(`/proc/${pid}/environ`, 'utf8')).split('\0');
    assert.ok(
      environ.includes(`GOMAXPROCS=${coLocatedGoMaxProcs(availableParallelism(), 3, {})}`),
      `node ${node}: ${environ.filter((e) => e.startsWith('GOMAXPROCS')).join(' ') || 'no GOMAXPROCS'}`,
    );
  }
  await startWorkers();
  const model = quickstartModel(
    CLUSTER,
    { CONTROL_PLANE_MACHINE_COUNT: '1', WORKER_MACHINE_COUNT: '2', KUBERNETES_VERSION: older },
    4,
  );
  await suite.client.apply([model]);
  const ready = await suite.client.waitForCluster('default', CLUSTER, () => undefined, 600_000);
  assert.equal(ready.phase, 'Provisioned', failedMachines(ready));
  const kube = new KubeClient(await suite.client.kubeconfig('default', CLUSTER));
  const assertMachines = (what: string) => assertAgreement(h.env.client, kube, 'default', CLUSTER, 3, what);
  const before = await assertMachines('after create');

  // Node 2 dies while a new worker is on its way; it stays down until the rollout is done.
  const { revision } = await suite.client.ownerStatus('machinedeployment', 'default', MD);
  await suite.client.rolloutRestart('machinedeployment', 'default', MD);
  await untilCluster(
    (s) => s.machineDeployments[0]!.machines.some((m) => !before.includes(m.name) && m.phase !== 'Running'),
    'a new worker on its way',
  );
  await temporal.killNode(2);
  const rolled = await untilCluster((s) => {
    const md = s.machineDeployments[0]!;
    return (
      md.revision > revision &&
      md.rolloutComplete &&
      md.machines.length === 2 &&
      md.machines.every((m) => m.phase === 'Running' && !before.includes(m.name))
    );
  }, 'the rollout done with node 2 down');
  assert.ok(rolled.machineDeployments[0]!.machines.every((m) => m.phase === 'Running'));
  const after = await assertMachines('after the rollout');
  assert.deepEqual(
    after.filter((name) => before.includes(name)),
    before.filter((name) => !name.startsWith(MD)),
    'every worker replaced once, the control plane kept',
  );
  await temporal.startServer();

  // Node 1, the one whose frontend capt's clients reached first, dies while the new control-plane machine is on its way.
  const probe = readyzProbe(ready.endpoint);
  let availability: Awaited<ReturnType<typeof probe.stop>>;
  try {
    await suite.client.apply([{ ...model, controlPlane: { ...model.controlPlane, version: newer } }]);
    await untilCluster(
      (s) => s.controlPlane!.machines.some((m) => m.version === newer && m.phase !== 'Running'),
      'the new control-plane machine on its way',
    );
    await temporal.killNode(1);
    await untilCluster(
      (s) =>
        s.controlPlane!.machines.length === 1 &&
        s.controlPlane!.machines[0]!.version === newer &&
        s.controlPlane!.machines[0]!.phase === 'Running' &&
        s.pending.length === 0,
      `the control plane on ${newer} with node 1 down`,
    );
  } finally {
    availability = await probe.stop();
  }
  assert.equal(
    availability.failures,
    0,
    `no readyz probe through the endpoint failed (${availability.failures} of ${availability.probes}: ${availability.reasons.join(' | ')})`,
  );
  const upgraded = await assertMachines('after the upgrade');
  assert.equal(upgraded.filter((name) => !after.includes(name)).length, 1, 'the control-plane machine replaced once');
  await temporal.startServer();

  await suite.client.deleteCluster('default', CLUSTER);
  await suite.client.waitForDeletion('default', CLUSTER, () => undefined, 300_000);
  await assertClusterGone(h.env.client, 'default', CLUSTER);
});
