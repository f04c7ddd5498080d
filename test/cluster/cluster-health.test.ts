import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadManifests } from '../../src/api/load-manifests';
import type { ClusterModel } from '../../src/api/model';
import { failedMachines } from '../../src/client/capt-client';
import { nodeHealthSignal } from '../../src/contract/machine-messages';
import { KubeClient } from '../../src/kube/kube-client';
import { machineWorkflowId } from '../../src/contract/workflow-ids';
import type { ClusterHealth } from '../../src/contract/cluster-health';
import { runCapt } from '../fixtures/capt-cli';
import { clusterKubeconfig } from '../fixtures/cluster-secrets';
import { harnessWithClient } from '../fixtures/machine-harness';
import { until } from '../fixtures/until';
import { Workloads } from '../fixtures/workloads';

const suite = harnessWithClient();
const h = suite.harness;
const capt = (...args: string[]) => runCapt({ TEMPORAL_ADDRESS: h.env.address, CAPT_HOME: h.home }, ...args);
const firstLine = (text: string) => text.split('\n')[0]!;

/** Runs `capt health cluster hc` until `done` holds for its answer; that answer. */
const healthUntil = (what: string, done: (r: { code: number; stdout: string }) => boolean, timeoutMs = 90_000) =>
  until(what, () => capt('health', 'cluster', 'hc'), {
    done,
    timeoutMs,
    intervalMs: 2000,
    describe: (r) => `exit ${r?.code}:\n${r?.stdout}${r?.stderr}`,
  });

/** The quickstart cluster hc: one control-plane machine, one worker. */
function quickstart(): ClusterModel {
  const text = readFileSync(join(__dirname, '../../../examples/quickstart.yaml'), 'utf8');
  const [model] = loadManifests([{ file: 'quickstart.yaml', text }], {
    CLUSTER_NAME: 'hc',
    CONTROL_PLANE_MACHINE_COUNT: '1',
    WORKER_MACHINE_COUNT: '1',
  });
  return model!;
}

test('capt health: exit 0 on a healthy cluster; 1 naming the stuck kube-system pod, the NotReady node and the stopped scheduler, then the stopped etcd member; 0 again once repaired', async () => {
  await suite.client.apply([quickstart()]);
  const ready = await suite.client.waitForCluster('default', 'hc', () => undefined, 600_000);
  assert.equal(ready.phase, 'Provisioned', failedMachines(ready));
  const controlPlane = ready.controlPlane!.machines[0]!.name;
  const worker = ready.machineDeployments[0]!.machines[0]!.name;
  const ref = (name: string) => ({ namespace: 'default', cluster: 'hc', name });

  // Healthy: the first line says so, the JSON has every part, and the list of clusters agrees.
  const healthy = await healthUntil('a healthy report', (r) => r.code === 0);
  assert.match(
    firstLine(healthy.stdout),
    new RegExp(
      `^cluster default/hc: healthy \\(2/2 Nodes Ready, etcd 1 member led by ${controlPlane}, 1 control-plane machine healthy\\)$`,
    ),
  );
  const json = await capt('health', 'cluster', 'hc', '-o', 'json');
  assert.equal(json.code, 0, json.stderr);
  const report = JSON.parse(json.stdout) as ClusterHealth;
  console.log(`healthy: ${healthy.stdout}\n-o json: ${json.stdout.length} bytes`);
  assert.equal(report.etcd.leader, controlPlane);
  assert.equal(report.etcd.membersMatchMachines, true);
  assert.ok(report.etcd.members[0]!.dbSizeBytes! > 0, 'etcd reports its DB size');
  assert.deepEqual([report.endpoint.readyz.ok, report.controlPlane.map((m) => m.machine)], [true, [controlPlane]]);
  assert.deepEqual(
    report.nodes.allocated.map((a) => a.resource),
    ['cpu', 'memory', 'pods'],
  );
  assert.equal(
    report.nodes.allocated.find((a) => a.resource === 'pods')!.allocatable,
    220,
    'two simulated Nodes of 110 pods each',
  );
  const all = await capt('health', 'clusters', '-A');
  assert.equal(all.code, 0, all.stderr);
  assert.match(all.stdout, /^NAMESPACE\s+NAME\s+HEALTH\s+NODES READY\s+PROBLEMS\ndefault\s+hc\s+Healthy\s+2\/2\s*$/m);
  const unknown = await capt('health', 'cluster', 'nope');
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /cluster default\/nope not found .*`capt get clusters -A` lists them/);

  // A kube-system pod no Node can take is named with the scheduler's event.
  const workloads = new Workloads(await clusterKubeconfig(suite.client.client, 'default', 'hc'));
  // The controller-manager creates the namespace's default service account shortly after start; a pod needs it.
  await until(
    'the kube-system/default service account',
    () => workloads.core.readNamespacedServiceAccount({ namespace: 'kube-system', name: 'default' }),
    { timeoutMs: 60_000 },
  );
  await workloads.core.createNamespacedPod({
    namespace: 'kube-system',
    body: {
      metadata: { name: 'stuck' },
      spec: { nodeSelector: { nowhere: 'true' }, containers: [{ name: 'a', image: 'registry.example/a:1' }] },
    },
  });
  const stuck = await healthUntil('the stuck pod with its event', (r) => /FailedScheduling/.test(r.stdout));
  assert.equal(stuck.code, 1);
  assert.match(
    firstLine(stuck.stdout),
    /^cluster default\/hc: unhealthy: kube-system pod stuck is Pending: Unschedulable: 0\/2 nodes are available/,
  );
  await workloads.core.deleteNamespacedPod({ namespace: 'kube-system', name: 'stuck', gracePeriodSeconds: 0 });

  // A worker's kubelet and the scheduler stopped: both named on the first line.
  await h.provider.breakMachine(ref(worker), 'kubelet');
  await h.provider.breakMachine(ref(controlPlane), 'kube-scheduler');
  const broken = await healthUntil("the worker's Node NotReady", (r) =>
    r.stdout.includes(`node ${worker} is NotReady`),
  );
  console.log(`capt health cluster hc, a kubelet and the scheduler stopped:\n${broken.stdout}`);
  assert.equal(broken.code, 1);
  assert.equal(
    firstLine(broken.stdout),
    `cluster default/hc: unhealthy: kube-scheduler on ${controlPlane}: connection refused (not running); ` +
      `node ${worker} is NotReady: Ready Unknown (NodeStatusUnknown: Kubelet stopped posting node status.)`,
  );
  const list = await capt('health', 'clusters');
  assert.equal(list.code, 1);
  assert.match(
    list.stdout,
    new RegExp(
      `default\\s+hc\\s+Unhealthy\\s+1/2\\s+kube-scheduler on ${controlPlane}: connection refused \\(not running\\) \\(and 1 more\\)`,
    ),
  );
  await h.provider.repairMachine(ref(worker));
  await h.provider.repairMachine(ref(controlPlane));
  await healthUntil('healthy after the repair', (r) => r.code === 0);

  // etcd stopped on the only control-plane machine: its member is named first, the apiserver that lost it next.
  await h.provider.breakMachine(ref(controlPlane), 'etcd');
  const noEtcd = await capt('health', 'cluster', 'hc');
  console.log(`capt health cluster hc, etcd stopped:\n${noEtcd.stdout}`);
  assert.equal(noEtcd.code, 1);
  assert.match(
    firstLine(noEtcd.stdout),
    new RegExp(
      `^cluster default/hc: unhealthy: etcd member ${controlPlane} is unhealthy: does not answer \\(.*ECONNREFUSED.*\\)`,
    ),
  );
  await h.provider.repairMachine(ref(controlPlane));
  const back = await healthUntil('healthy once etcd runs again', (r) => r.code === 0, 120_000);
  assert.match(firstLine(back.stdout), /^cluster default\/hc: healthy/);
});

test("the Node watch corrects a machine told its Node is unhealthy by a tell it has no record of (a checkpoint that lost its last seconds, a fresh attempt): within a read of the machines' records", async () => {
  // The first test's cluster, healthy again: its worker's Node is Ready.
  const worker = (await suite.client.clusterStatus('default', 'hc')).machineDeployments[0]!.machines[0]!.name;
  const handle = h.env.client.workflow.getHandle(machineWorkflowId('default', worker));
  const nodeHealthTells = async () =>
    (await handle.fetchHistory()).events!.filter(
      (e) => e.workflowExecutionSignaledEventAttributes?.signalName === nodeHealthSignal.name,
    ).length;
  const nodeHealthy = async () =>
    (await suite.client.machineStatuses('default', [worker]))[0]?.conditions.find((c) => c.type === 'NodeHealthy');
  const isHealthy = async () => (await nodeHealthy())?.status === 'True';
  await until("the worker's NodeHealthy True after the first test's repair", isHealthy);
  const before = await nodeHealthTells();
  // What the watch sends when a Node stops reporting, sent here as if by a watch attempt whose record of it was lost.
  await handle.signal(nodeHealthSignal, {
    ready: 'Unknown',
    message: 'Kubelet stopped posting node status.',
    conditions: [{ type: 'Ready', status: 'Unknown', since: new Date().toISOString(), reason: 'NodeStatusUnknown' }],
  });
  // Told again by the watch: nothing about the Node changed, so only its read of the machines' records can do it.
  await until('the watch to tell the machine again', async () => (await nodeHealthTells()) >= before + 2, {
    timeoutMs: 120_000,
  });
  await until('NodeHealthy True again', isHealthy);
});

test('capt health: a MachineDeployment whose machines never get a Node makes it exit 1, named on the first line while every Node is Ready: short of its Nodes, past its startup timeout, then while its machines are remediated', async () => {
  // The first test's cluster (healthy again), with a second pool of 2 machines that boot for an hour.
  const model = quickstart();
  const slow = structuredClone(model.machineDeployments[0]!);
  slow.name = 'hc-slow';
  slow.replicas = 2;
  slow.template.infrastructure = { ...slow.template.infrastructure, spec: { bootDelaySeconds: 3600 } };
  const check = { name: 'hc-slow', unhealthyNodeConditions: [], nodeStartupTimeoutSeconds: 20 };
  const withSlow = () => ({ ...model, machineDeployments: [...model.machineDeployments, slow] });
  // maxUnhealthy 1: with both machines past their timeout nothing is remediated, so they stay to be seen.
  slow.healthCheck = { ...check, maxUnhealthy: 1 };
  await suite.client.apply([withSlow()]);
  const short = await healthUntil('hc-slow short of its Nodes', (r) =>
    r.stdout.includes('MachineDeployment hc-slow has 0/2 Nodes'),
  );
  assert.equal(short.code, 1);
  assert.match(firstLine(short.stdout), /^cluster default\/hc: unhealthy: MachineDeployment hc-slow has 0\/2 Nodes/);
  assert.match(short.stdout, /^nodes: 2\/2 Ready$/m, 'every Node there is Ready: only the machines asked for tell');

  const past = await healthUntil('both machines past their 20 s startup timeout', (r) =>
    firstLine(r.stdout).includes('2 machines without a Node past'),
  );
  console.log(`capt health cluster hc, hc-slow's machines never boot:\n${past.stdout}`);
  assert.equal(past.code, 1);
  assert.match(
    firstLine(past.stdout),
    /^cluster default\/hc: unhealthy: MachineDeployment hc-slow has 0\/2 Nodes; MachineDeployment hc-slow: 2 machines without a Node past their startup timeout \(20s\): hc-slow-\S+, hc-slow-\S+$/,
  );
  const list = await capt('health', 'clusters');
  assert.equal(list.code, 1);
  assert.match(
    list.stdout,
    /default\s+hc\s+Unhealthy\s+2\/2\s+MachineDeployment hc-slow has 0\/2 Nodes \(and 1 more\)/,
  );

  // Remediation allowed: each machine is replaced by one that never boots either (and so on every 20 s).
  slow.healthCheck = check;
  await suite.client.apply([withSlow()]);
  const remediating = await healthUntil('hc-slow remediating', (r) =>
    firstLine(r.stdout).includes('MachineDeployment hc-slow is remediating'),
  );
  console.log(`capt health cluster hc, hc-slow remediated:\n${remediating.stdout}`);
  assert.equal(remediating.code, 1);
  assert.match(
    firstLine(remediating.stdout),
    /^cluster default\/hc: unhealthy: MachineDeployment hc-slow has 0\/2 Nodes; (MachineDeployment hc-slow: \d machines? without a Node past their startup timeout \(20s\): [^;]+; )?MachineDeployment hc-slow is remediating hc-slow-\S+ \(NodeStartupTimeout\)/,
  );
  const json = await capt('health', 'cluster', 'hc', '-o', 'json');
  assert.equal(json.code, 1);
  const pool = (JSON.parse(json.stdout) as ClusterHealth).machinePools.find((p) => p.name === 'hc-slow')!;
  const status = await suite.client.ownerStatus('machinedeployment', 'default', 'hc-slow');
  assert.deepEqual([pool.withNode, pool.replicas, pool.nodeStartupTimeoutSeconds], [0, 2, 20]);
  const remediated = status.healthCheck!.remediations.map((r) => r.machine);
  assert.ok(
    pool.remediating.length > 0 && pool.remediating.every((r) => remediated.includes(r.machine)),
    `remediating ${JSON.stringify(pool.remediating)}: the MachineDeployment remediated ${remediated.join(', ')}`,
  );

  await suite.client.apply([model]);
  await healthUntil('healthy once hc-slow is gone', (r) => r.code === 0);
});

test('a Node deleted by someone else: the watch tells its machine it is gone (NodeHealthy False, NodeNotFound) once it has stayed missing past its grace; scaling the pool away and back heals the cluster', async () => {
  const pool = 'hc-md-0';
  const [worker] = (await suite.client.ownerStatus('machinedeployment', 'default', pool)).machines;
  const [status] = await suite.client.machineStatuses('default', [worker!.name]);
  const node = status!.nodeRef!;
  const kube = new KubeClient(await suite.client.kubeconfig('default', 'hc'));
  const deletedAt = Date.now();
  await kube.deleteNode(node);
  const nodeHealthy = async () =>
    (await suite.client.machineStatuses('default', [worker!.name]))[0]?.conditions.find(
      (c) => c.type === 'NodeHealthy',
    );
  const told = await until(`${worker!.name} told its Node ${node} is gone`, nodeHealthy, {
    done: (c) => c?.reason === 'NodeNotFound',
    timeoutMs: 120_000,
    intervalMs: 1000,
    describe: (c) => JSON.stringify(c),
  });
  const seconds = (Date.now() - deletedAt) / 1000;
  console.log(`Node ${node} deleted by someone else: its machine told in ${seconds.toFixed(1)} s`);
  assert.equal(told?.status, 'False');
  assert.match(told?.message ?? '', new RegExp(`Node ${node} was deleted`));
  assert.ok(seconds >= 15, `told only once the Node stayed missing for the watch's 15 s grace: ${seconds} s`);

  await suite.client.scale('machinedeployment', 'default', pool, 0);
  await until('hc-md-0 scaled to 0', () => suite.client.ownerStatus('machinedeployment', 'default', pool), {
    done: (s) => s.machines.length === 0,
    timeoutMs: 120_000,
  });
  await suite.client.scale('machinedeployment', 'default', pool, 1);
  await healthUntil('healthy again with a new worker', (r) => r.code === 0);
});
