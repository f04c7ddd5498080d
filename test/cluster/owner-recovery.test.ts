import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadManifests } from '../../src/api/load-manifests';
import { failedMachines, NotFoundError } from '../../src/client/capt-client';
import type { ClusterStatus } from '../../src/contract/cluster';
import { clusterWorkflowId, machineDeploymentWorkflowId } from '../../src/contract/workflow-ids';
import type { OwnerCheckIntervals } from '../../workflows/cluster/cluster-workflow';
import { clusterDir, machinesDir } from '../../providers/local/layout';
import { listening, processesMentioning } from '../fixtures/leaks';
import { quickstartModel } from '../fixtures/cluster-agreement';
import { harnessWithClient } from '../fixtures/machine-harness';
import { until } from '../fixtures/until';

const root = join(__dirname, '../../..');
const suite = harnessWithClient();
const h = suite.harness;

/** The quickstart cluster with 1 control-plane and 2 worker machines; the workers boot for `bootDelaySeconds`. */
const clusterModel = (name: string, bootDelaySeconds = 0) =>
  quickstartModel(name, { CONTROL_PLANE_MACHINE_COUNT: '1', WORKER_MACHINE_COUNT: '2' }, bootDelaySeconds);

async function createCluster(name: string): Promise<void> {
  await suite.client.apply([clusterModel(name)]);
  const ready = await suite.client.waitForCluster('default', name, () => undefined, 600_000);
  assert.equal(ready.phase, 'Provisioned', failedMachines(ready));
}

/** The MachineDeployment's machines as the provider holds them (directories) and as Temporal runs them (workflows). */
async function machinesOf(cluster: string, md: string): Promise<{ provider: string[]; workflows: string[] }> {
  const provider = (await readdir(machinesDir(clusterDir('default', cluster))).catch(() => [] as string[]))
    .filter((d) => d.startsWith(`${md}-`))
    .sort();
  const workflows: string[] = [];
  const query = `CaptKind = "Machine" AND CaptCluster = "${cluster}" AND ExecutionStatus = "Running"`;
  for await (const wf of h.env.client.workflow.list({ query }))
    if (wf.workflowId.startsWith(`machine/default/${md}-`))
      workflows.push(wf.workflowId.replace('machine/default/', ''));
  return { provider, workflows: workflows.sort() };
}

/**
 * Waits until the MachineDeployment runs exactly `replicas` machines, every one with one provider machine
 * and one workflow; meanwhile the provider never holds more than `most`.
 */
async function settledAt(cluster: string, md: string, replicas: number, most = replicas): Promise<string[]> {
  const deadline = Date.now() + 300_000;
  for (;;) {
    const [s, found] = await Promise.all([
      suite.client.ownerStatus('machinedeployment', 'default', md),
      machinesOf(cluster, md),
    ]);
    assert.ok(found.provider.length <= most, `never more than ${most} provider machines: ${found.provider.join(', ')}`);
    const names = s.machines.map((m) => m.name).sort();
    if (
      s.readyReplicas === replicas &&
      names.length === replicas &&
      found.provider.join() === names.join() &&
      found.workflows.join() === names.join()
    )
      return names;
    assert.ok(
      Date.now() < deadline,
      `${md} at ${replicas}: ${s.readyReplicas} ready, records ${names.join(', ')}, provider ${found.provider.join(', ')}, workflows ${found.workflows.join(', ')}; ${s.step}`,
    );
    await sleep(1000);
  }
}

/** Waits until the MachineDeployment's rollout of `revision` is complete and none of the `replaced` machines is left. */
const rolledOut = (md: string, revision: number, replaced: string[]) =>
  until(
    `${md} rolled out to revision ${revision}`,
    () => suite.client.ownerStatus('machinedeployment', 'default', md),
    {
      done: (s) => s.revision === revision && s.rolloutComplete && s.machines.every((m) => !replaced.includes(m.name)),
      describe: (s) => `revision ${s?.revision}: ${s?.step}`,
    },
  );

/** After a cluster's deletion: no machine directory, process, port or workflow of it is left. */
async function assertNothingLeft(cluster: string, endpoint: string): Promise<void> {
  const dir = clusterDir('default', cluster);
  assert.equal(existsSync(dir), false, `no directory left under ${dir}`);
  assert.deepEqual(await processesMentioning([`${dir} `, `${dir}/`]), [], 'no process left');
  const [host, port] = endpoint.split(':');
  assert.equal(await listening(host!, Number(port)), false, 'the endpoint port is closed');
  const running: string[] = [];
  for await (const wf of h.env.client.workflow.list({
    query: `CaptCluster = "${cluster}" AND ExecutionStatus = "Running"`,
  }))
    running.push(wf.workflowId);
  assert.deepEqual(running, [], 'no workflow of the cluster runs');
}

/**
 * A cluster of 1 control-plane and 2 worker machines whose MachineDeployment workflow is then terminated,
 * `rolled` first (a template change applied and rolled out, so its revision is 2): its machines, endpoint and
 * the lost owner's revision.
 */
async function clusterWithLostDeployment(
  cluster: string,
  md: string,
  rolled = false,
): Promise<{ before: string[]; endpoint: string; revision: number }> {
  await createCluster(cluster);
  if (rolled) {
    const created = await settledAt(cluster, md, 2);
    await suite.client.apply([clusterModel(cluster, 1)]);
    await rolledOut(md, 2, created);
  }
  const before = await settledAt(cluster, md, 2);
  const { revision } = await suite.client.ownerStatus('machinedeployment', 'default', md);
  const { endpoint } = await suite.client.clusterSummary('default', cluster);
  await h.env.client.workflow
    .getHandle(machineDeploymentWorkflowId('default', md))
    .terminate('test: an operator terminates the owner');
  return { before, endpoint, revision };
}

test('a terminated MachineDeployment workflow at revision 2 is rebuilt by capt repair cluster, adopts its machines, scales up and down, numbers its next rollout 3, and the cluster deletes cleanly', async () => {
  const [cluster, md] = ['lost', 'lost-md-0'];
  const { before, endpoint, revision } = await clusterWithLostDeployment(cluster, md, true);
  assert.equal(revision, 2, 'the lost owner had rolled out once');

  // Scaling a lost owner says what happened and how to repair it.
  await assert.rejects(suite.client.scale('machinedeployment', 'default', md, 3), (err: Error) => {
    assert.ok(err instanceof NotFoundError, err.message);
    assert.match(err.message, /is TERMINATED, not running; `capt repair cluster lost -n default` rebuilds it/);
    return true;
  });

  const dryRun = await suite.client.repairCluster('default', cluster, { dryRun: true });
  assert.deepEqual(
    dryRun.owners.map((o) => `${o.kind}/${o.name} ${o.state} ${o.machines} ${o.action}`),
    ['KubeadmControlPlane/lost-control-plane RUNNING 1 none', `MachineDeployment/${md} TERMINATED 2 would rebuild`],
  );
  assert.equal(dryRun.providerMachines, 3, 'the provider holds the 3 machines the workflows account for');
  assert.equal(
    (await h.env.client.workflow.getHandle(machineDeploymentWorkflowId('default', md)).describe()).status.name,
    'TERMINATED',
    'a dry run rebuilds nothing',
  );

  const report = await suite.client.repairCluster('default', cluster);
  assert.deepEqual(
    report.owners.map((o) => `${o.name} ${o.action}`),
    ['lost-control-plane none', `${md} rebuilt`],
  );
  const [adopted] = await suite.client.waitForAdoption(report, 120_000);
  assert.equal(adopted!.adoption!.adopted, 2);
  assert.deepEqual(
    adopted!.machines.map((m) => m.name).sort(),
    before,
    'the very machines it had: none created, none lost',
  );
  assert.deepEqual(await settledAt(cluster, md, 2), before, 'and nothing replaced them');
  for (const deadline = Date.now() + 60_000; ; await sleep(500)) {
    const { recoveries } = await suite.client.clusterSummary('default', cluster);
    if (recoveries[0]?.adopted === 2) {
      assert.equal(recoveries.length, 1);
      assert.match(recoveries[0].cause, /workflow md\/default\/lost-md-0 TERMINATED; found by capt repair cluster/);
      break;
    }
    assert.ok(Date.now() < deadline, `the cluster tells of the rebuild: ${JSON.stringify(recoveries)}`);
  }

  await suite.client.scale('machinedeployment', 'default', md, 3);
  const three = await settledAt(cluster, md, 3);
  assert.deepEqual(
    before.filter((n) => three.includes(n)),
    before,
    'scale-up keeps the adopted machines',
  );
  await suite.client.scale('machinedeployment', 'default', md, 1);
  const [last] = await settledAt(cluster, md, 1, 3);

  // Revisions go on from the lost owner's number: the rebuilt one kept 2, its first rollout is 3.
  assert.equal(
    (await suite.client.rolloutRestart('machinedeployment', 'default', md)).revision,
    revision + 1,
    "the restart is numbered after the lost owner's revision",
  );
  assert.deepEqual(
    (await suite.client.rolloutHistory('machinedeployment', 'default', md)).map((r) => r.revision),
    [revision, revision + 1],
    'the rebuilt revision keeps the lost number',
  );
  await rolledOut(md, revision + 1, [last!]);
  assert.notDeepEqual(await settledAt(cluster, md, 1), [last], 'the restart replaced the machine');

  await suite.client.deleteCluster('default', cluster);
  await suite.client.waitForDeletion('default', cluster, () => undefined, 600_000);
  assert.deepEqual(await machinesOf(cluster, md), { provider: [], workflows: [] });
  await assertNothingLeft(cluster, endpoint);
});

test('a cluster whose MachineDeployment workflow was terminated is deleted straight away: the owner is rebuilt to delete its machines', async () => {
  const [cluster, md] = ['orphan', 'orphan-md-0'];
  const { before, endpoint } = await clusterWithLostDeployment(cluster, md);

  await suite.client.deleteCluster('default', cluster);
  await suite.client.waitForDeletion('default', cluster, () => undefined, 600_000);
  const final = (await h.env.client.workflow
    .getHandle(clusterWorkflowId('default', cluster))
    .result()) as ClusterStatus;
  assert.equal(final.phase, 'Deleted');
  assert.deepEqual(
    final.recoveries.map((r) => `${r.kind}/${r.name} ${r.adopted}`),
    [`MachineDeployment/${md} ${before.length}`],
  );
  assert.match(final.recoveries[0]!.cause, /TERMINATED; found by capt delete cluster/);
  assert.deepEqual(await machinesOf(cluster, md), { provider: [], workflows: [] });
  await assertNothingLeft(cluster, endpoint);
});

test('a terminated control-plane workflow is rebuilt when capt apply scales it: it adopts its machine, joins two more, and the cluster deletes cleanly', async () => {
  const [cluster, cp] = ['headless', 'headless-control-plane'];
  await createCluster(cluster);
  const { endpoint, controlPlane } = await suite.client.clusterSummary('default', cluster);
  const first = (await suite.client.ownerStatus('kubeadmcontrolplane', 'default', cp)).machines.map((m) => m.name);
  assert.equal(first.length, 1);
  await h.env.client.workflow.getHandle(`kcp/default/${cp}`).terminate('test: lost control plane');

  const text = await readFile(join(root, 'examples/quickstart.yaml'), 'utf8');
  const [three] = loadManifests([{ file: 'quickstart.yaml', text }], {
    CLUSTER_NAME: cluster,
    CONTROL_PLANE_MACHINE_COUNT: '3',
    WORKER_MACHINE_COUNT: '2',
  });
  await suite.client.apply([three!]);
  const deadline = Date.now() + 420_000;
  for (;;) {
    const s = await suite.client.ownerStatus('kubeadmcontrolplane', 'default', cp);
    const provider = (await readdir(machinesDir(clusterDir('default', cluster)))).filter((d) => d.startsWith(`${cp}-`));
    assert.ok(provider.length <= 3, `never more than 3 control-plane machines: ${provider.join(', ')}`);
    if (s.readyReplicas === 3 && s.machines.length === 3 && provider.length === 3) {
      assert.equal(s.adoption?.adopted, 1);
      assert.ok(
        s.machines.some((m) => m.name === first[0]),
        'the adopted machine stays',
      );
      // A scale makes no revision: the rebuilt owner numbers its template as the lost one did.
      assert.equal(
        s.revision,
        controlPlane!.revision,
        "the rebuilt control plane keeps the lost one's revision number",
      );
      break;
    }
    assert.ok(
      Date.now() < deadline,
      `control plane at 3: ${s.readyReplicas} ready, ${s.machines.length} records; ${s.step}`,
    );
    await sleep(1000);
  }
  const { recoveries } = await suite.client.clusterSummary('default', cluster);
  assert.match(recoveries[0]!.cause, /workflow kcp\/default\/headless-control-plane TERMINATED; found by capt apply/);

  await suite.client.deleteCluster('default', cluster);
  await suite.client.waitForDeletion('default', cluster, () => undefined, 600_000);
  await assertNothingLeft(cluster, endpoint);
});

test('the cluster rebuilds lost owners by itself: a MachineDeployment workflow terminated while idle, a control-plane workflow terminated mid-deletion (so the deletion finishes); no kubeconfig before the CA or while deleting', async () => {
  const [cluster, md, cp] = ['keeper', 'keeper-md-0', 'keeper-control-plane'];
  // The checks' period is the only thing shortened: 5 and 2 minutes are too long to wait for in a test.
  const ownerChecks: OwnerCheckIntervals = { idle: '3s', deleting: '3s' };
  const refusedKubeconfig = (why: RegExp) =>
    assert.rejects(suite.client.kubeconfig('default', cluster), (err: Error) => {
      assert.match(err.message, why);
      return true;
    });

  // Paused from the start, the cluster has made no certificate authority: there is nothing to sign a kubeconfig with.
  await suite.client.apply([{ ...clusterModel(cluster), paused: true }], { ownerChecks });
  await refusedKubeconfig(/Cluster default\/keeper: has no certificate authority yet \(paused/);
  await createCluster(cluster);
  const before = await settledAt(cluster, md, 2);

  await h.env.client.workflow.getHandle(machineDeploymentWorkflowId('default', md)).terminate('test: lost while idle');
  const rebuilt = await until(
    'the idle cluster rebuilds its MachineDeployment',
    () => suite.client.clusterSummary('default', cluster),
    { done: (s) => s.recoveries[0]?.adopted === 2, describe: (s) => JSON.stringify(s?.recoveries), timeoutMs: 60_000 },
  );
  assert.equal(rebuilt.recoveries.length, 1);
  assert.match(
    rebuilt.recoveries[0]!.cause,
    /workflow md\/default\/keeper-md-0 TERMINATED; found by the cluster's check every 3s/,
  );
  assert.deepEqual(await settledAt(cluster, md, 2), before, 'the rebuilt owner runs the very machines it had');

  await suite.client.deleteCluster('default', cluster);
  await refusedKubeconfig(/Cluster default\/keeper: is being deleted; it has no kubeconfig to give/);
  // Terminated after it took the deletion and before its machine is gone: it can never report that it is done.
  const deleting = await until(
    'the control plane deleting its machine',
    () => suite.client.ownerStatus('kubeadmcontrolplane', 'default', cp),
    { done: (s) => s.stepReason === 'Deleting', describe: (s) => `${s?.stepReason}: ${s?.step}`, intervalMs: 100 },
  );
  await h.env.client.workflow.getHandle(`kcp/default/${cp}`).terminate('test: lost mid-deletion');
  assert.equal(deleting.machines.length, 1, 'its machine was still there when it was terminated');

  // A few checks' worth: the rebuild comes from the deletion's own check, nothing else would start it.
  await suite.client.waitForDeletion('default', cluster, () => undefined, 120_000);
  const final = (await h.env.client.workflow
    .getHandle(clusterWorkflowId('default', cluster))
    .result()) as ClusterStatus;
  // Its machine may have finished deleting before the rebuild, so it adopts that machine or nothing.
  assert.deepEqual(
    final.recoveries.map((r) => `${r.kind}/${r.name}`),
    [`MachineDeployment/${md}`, `KubeadmControlPlane/${cp}`],
  );
  assert.match(final.recoveries[1]!.cause, /TERMINATED; found by capt delete cluster \(waiting for it\)/);
  await assertNothingLeft(cluster, rebuilt.endpoint);
});
