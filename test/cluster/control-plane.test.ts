import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { etcdMemberNames } from '../fixtures/cluster-secrets';
import { loadManifests } from '../../src/api/load-manifests';
import { failedMachines } from '../../src/client/capt-client';
import { kubectlFor } from '../../src/tools';
import { controlPlaneCleanupHook } from '../../src/contract/machine';
import { controlPlaneMachineLabels } from '../../src/contract/machine-labels';
import type { ClusterView } from '../../src/contract/cluster';
import { harnessWithClient } from '../fixtures/machine-harness';
import { until } from '../fixtures/until';

const run = promisify(execFile);
const root = join(__dirname, '../../..');
const suite = harnessWithClient();
const h = suite.harness;

const settled = (done: (s: ClusterView) => boolean, what: string, timeoutMs?: number) =>
  until(what, () => suite.client.clusterStatus('default', 'ha'), {
    done,
    timeoutMs,
    intervalMs: 1000,
    describe: (last) => `${last?.step} / ${last?.controlPlane?.step}`,
  });

async function members(status: ClusterView): Promise<{ etcd: string[]; machines: string[] }> {
  const machines = status.controlPlane!.machines;
  return {
    etcd: await etcdMemberNames(
      suite.client.client,
      'default',
      'ha',
      machines.map((m) => m.address),
    ),
    machines: machines.map((m) => m.name).sort(),
  };
}

test('3 control-plane and 2 worker machines: 5 Ready nodes; machineTemplate.metadata on every control-plane machine, changed in place; a machine deleted directly leaves etcd and is replaced; scale 3 -> 1 -> 3 keeps etcd members equal to the machines; pause, restart, resume; delete leaves nothing', async () => {
  const vars = { CLUSTER_NAME: 'ha', CONTROL_PLANE_MACHINE_COUNT: '3', WORKER_MACHINE_COUNT: '2' };
  const text = (await import('node:fs')).readFileSync(join(root, 'examples/quickstart.yaml'), 'utf8');
  const [model] = loadManifests([{ file: 'quickstart.yaml', text }], vars);
  // As a ClusterClass topology labels its control plane's machines (its MachineHealthCheck selects the label).
  model!.controlPlane.labels = { 'topology.cluster.x-k8s.io/owned': '', tier: 'control' };
  model!.controlPlane.annotations = { 'example.com/owner': 'platform' };
  await suite.client.apply([model!]);
  // A MachineDeployment applied while the control plane initialises starts once, with the others (a second
  // start would fail the cluster's workflow task, which the harness's history guard reports).
  const extra = { ...model!.machineDeployments[0]!, name: 'ha-md-extra', replicas: 0 };
  const outcomes = await suite.client.apply([{ ...model!, machineDeployments: [...model!.machineDeployments, extra] }]);
  assert.deepEqual(
    outcomes.filter((o) => o.ref.includes('ha-md-extra')).map((o) => o.outcome),
    ['created'],
  );
  const ready = await suite.client.waitForCluster('default', 'ha', () => undefined, 600_000);
  assert.equal(ready.phase, 'Provisioned', failedMachines(ready));
  assert.deepEqual(ready.machineDeployments.map((md) => `${md.name} ${md.readyReplicas}/${md.replicas}`).sort(), [
    'ha-md-0 2/2',
    'ha-md-extra 0/0',
  ]);
  const runs: string[] = [];
  for await (const wf of h.env.client.workflow.list({ query: `WorkflowId = "md/default/ha-md-extra"` }))
    runs.push(wf.runId);
  assert.equal(runs.length, 1, 'one run of the MachineDeployment added while the control plane initialised');
  const kubeconfig = join(h.home, 'ha.kubeconfig');
  await writeFile(kubeconfig, await suite.client.kubeconfig('default', 'ha'), { mode: 0o600 });
  const nodes = JSON.parse(
    (await run(kubectlFor(ready.version), ['--kubeconfig', kubeconfig, 'get', 'nodes', '-o', 'json'])).stdout,
  ).items;
  assert.equal(
    nodes.filter((n: { status: { conditions: { type: string; status: string }[] } }) =>
      n.status.conditions.some((c) => c.type === 'Ready' && c.status === 'True'),
    ).length,
    5,
  );
  let m = await members(ready);
  assert.deepEqual(m.etcd, m.machines, 'three etcd members, one per control-plane machine');
  assert.equal(m.etcd.length, 3);
  for (const machine of await suite.client.machineStatuses('default', m.machines)) {
    assert.deepEqual(
      [machine.labels, machine.annotations],
      [
        { ...model!.controlPlane.labels, ...controlPlaneMachineLabels('ha', 'ha-control-plane') },
        { ...model!.controlPlane.annotations, [controlPlaneCleanupHook]: '' },
      ],
      `${machine.name} carries the template's labels and annotations beside its own`,
    );
  }

  // A control-plane machine deleted directly (not by its control plane) waits at its cleanup hook until the
  // control plane has taken its etcd member out; then the control plane replaces it.
  const deleted = m.machines[1]!;
  await suite.client.deleteMachine('default', deleted);
  const replaced = await settled(
    (s) =>
      s.controlPlane!.machines.length === 3 &&
      !s.controlPlane!.machines.some((x) => x.name === deleted) &&
      s.controlPlane!.readyReplicas === 3,
    'the deleted control-plane machine replaced',
  );
  m = await members(replaced);
  assert.deepEqual(m.etcd, m.machines, "the deleted machine's etcd member is gone, the replacement's joined");

  await assert.rejects(
    suite.client.scale('kubeadmcontrolplane', 'default', 'ha-control-plane', 2),
    /2 replicas cannot keep etcd quorum/,
  );
  await suite.client.scale('kubeadmcontrolplane', 'default', 'ha-control-plane', 1);
  const one = await settled(
    (s) => s.controlPlane!.machines.length === 1 && s.controlPlane!.readyReplicas === 1,
    'scale to 1',
  );
  m = await members(one);
  assert.deepEqual(m.etcd, m.machines);
  assert.equal(m.etcd.length, 1);

  // Restart while paused records a revision and replaces nothing; resume replaces the machine (join, then remove).
  const kcp = 'ha-control-plane';
  const before = one.controlPlane!.machines[0]!.name;
  await suite.client.rolloutPause('kubeadmcontrolplane', 'default', kcp, true);
  // From the CLI, as an operator would: the restart is recorded as revision 2 (and, paused, waits).
  const restart = await run(
    process.execPath,
    [join(root, 'dist/src/cli/main.js'), 'rollout', 'restart', `kubeadmcontrolplane/${kcp}`],
    { env: { ...process.env, TEMPORAL_ADDRESS: h.env.address } },
  );
  assert.equal(restart.stdout.trim(), `kubeadmcontrolplane/${kcp} restarted: revision 2`);
  await sleep(5000);
  const held = await suite.client.ownerStatus('kubeadmcontrolplane', 'default', kcp);
  assert.deepEqual(
    [held.paused, held.rolloutComplete, held.machines.map((x) => x.name)],
    [true, false, [before]],
    'paused: the restart waits',
  );
  assert.equal(held.stepReason, 'Paused');
  await suite.client.rolloutPause('kubeadmcontrolplane', 'default', kcp, false);
  const restarted = await settled(
    (s) =>
      s.controlPlane!.rolloutComplete &&
      s.controlPlane!.machines.length === 1 &&
      s.controlPlane!.machines[0]!.name !== before,
    'the restart to replace the machine',
  );
  m = await members(restarted);
  assert.deepEqual(m.etcd, m.machines, 'the new machine is the only etcd member');
  const cli = await run(
    process.execPath,
    [join(root, 'dist/src/cli/main.js'), 'rollout', 'status', `kubeadmcontrolplane/${kcp}`],
    { env: { ...process.env, TEMPORAL_ADDRESS: h.env.address } },
  );
  assert.match(cli.stdout, /^kubeadmcontrolplane\/ha-control-plane successfully rolled out \(revision 2, v\S+\)/);
  assert.deepEqual(
    (await suite.client.rolloutHistory('kubeadmcontrolplane', 'default', kcp)).map((r) => [
      r.revision,
      r.cause,
      r.change,
    ]),
    [
      [1, 'created', 'initial template'],
      [2, 'restart', 'same template (restart)'],
    ],
  );

  // certificatesExpiryDays: the apiserver certificates are read from the machines; a year ahead, they replace nothing.
  // A new template label and a template annotation dropped, in the same apply, change the machine in place; so
  // does a taint, which reaches its Node.
  model!.controlPlane.labels = { ...model!.controlPlane.labels, tier: 'control-2' };
  model!.controlPlane.annotations = {};
  model!.controlPlane.taints = [{ key: 'capt.example/control', effect: 'NoSchedule', propagation: 'Always' }];
  await suite.client.apply([
    { ...model!, controlPlane: { ...model!.controlPlane, replicas: 1, certificatesExpiryDays: 300 } },
  ]);
  let certs = await suite.client.ownerStatus('kubeadmcontrolplane', 'default', kcp);
  for (const deadline = Date.now() + 60_000; !certs.certificatesExpireAt && Date.now() < deadline; await sleep(500))
    certs = await suite.client.ownerStatus('kubeadmcontrolplane', 'default', kcp);
  const expiresInDays =
    (Date.parse(Object.values(certs.certificatesExpireAt ?? {})[0] ?? '') - Date.now()) / 86_400_000;
  assert.ok(
    expiresInDays > 364 && expiresInDays <= 365,
    `the machine's apiserver certificate expires in ${expiresInDays.toFixed(2)} days`,
  );
  const [relabelled] = await until(
    'the template label change to reach the running machine',
    () => suite.client.machineStatuses('default', [restarted.controlPlane!.machines[0]!.name]),
    { done: ([x]) => x?.labels.tier === 'control-2', timeoutMs: 60_000, intervalMs: 500 },
  );
  assert.deepEqual(
    [relabelled!.labels, relabelled!.annotations],
    [{ ...model!.controlPlane.labels, ...controlPlaneMachineLabels('ha', kcp) }, { [controlPlaneCleanupHook]: '' }],
    'in place: the new label, the dropped annotation gone, its own label and cleanup hook kept',
  );
  await until(
    "the template's taint on the machine's Node",
    async () => {
      const got = await run(kubectlFor(ready.version), [
        '--kubeconfig',
        kubeconfig,
        'get',
        'node',
        relabelled!.nodeRef!,
        '-o',
        'jsonpath={.spec.taints[*].key}',
      ]);
      return got.stdout.split(' ').includes('capt.example/control');
    },
    { timeoutMs: 60_000 },
  );
  await sleep(3000);
  certs = await suite.client.ownerStatus('kubeadmcontrolplane', 'default', kcp);
  assert.deepEqual(
    [certs.revision, certs.machines.map((x) => x.name)],
    [2, [restarted.controlPlane!.machines[0]!.name]],
    'no rollout: neither the certificates nor the label replaced the machine',
  );
  await assert.rejects(
    suite.client.apply([
      { ...model!, controlPlane: { ...model!.controlPlane, replicas: 1, certificatesExpiryDays: 365 } },
    ]),
    /certificatesExpiryDays 365 is not less than the 365-day validity/,
  );

  // rolloutAfter: once it passes, the machine created before it is replaced.
  const rolloutAfter = new Date(Date.now() + 3000).toISOString();
  await suite.client.apply([
    { ...model!, controlPlane: { ...model!.controlPlane, replicas: 1, certificatesExpiryDays: 300, rolloutAfter } },
  ]);
  const renewed = await settled(
    (s) =>
      s.controlPlane!.rolloutComplete &&
      s.controlPlane!.machines.length === 1 &&
      s.controlPlane!.machines[0]!.createdAt > rolloutAfter,
    'the rolloutAfter replacement',
  );
  m = await members(renewed);
  assert.deepEqual(m.etcd, m.machines);
  assert.equal(
    (await suite.client.rolloutHistory('kubeadmcontrolplane', 'default', kcp)).at(-1)!.cause,
    `rolloutAfter ${rolloutAfter}`,
  );

  await suite.client.scale('kubeadmcontrolplane', 'default', 'ha-control-plane', 3);
  const three = await settled(
    (s) => s.controlPlane!.readyReplicas === 3 && s.controlPlane!.machines.length === 3,
    'scale back to 3',
  );
  m = await members(three);
  assert.deepEqual(m.etcd, m.machines);
  assert.equal(m.etcd.length, 3);

  await suite.client.deleteCluster('default', 'ha');
  await suite.client.waitForDeletion('default', 'ha', () => undefined, 300_000);
  const { existsSync } = await import('node:fs');
  const { clusterDir } = await import('../../providers/local/layout');
  assert.equal(existsSync(clusterDir('default', 'ha')), false);
});
