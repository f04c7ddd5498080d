import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import type { V1Node } from '@kubernetes/client-node';
import { KubeClient } from '../../src/kube/kube-client';
import { kubectlFor } from '../../src/tools';
import { MachineHarness } from '../fixtures/machine-harness';
import { runCapt } from '../fixtures/capt-cli';
import { capiQuickStart } from '../fixtures/capi-quick-start';
import { until } from '../fixtures/until';
import { metricSum } from '../fixtures/worker-metrics';

const run = promisify(execFile);
const h = new MachineHarness(undefined, { metrics: true });
const capt = (...args: string[]) => runCapt({ TEMPORAL_ADDRESS: h.env.address, CAPT_HOME: h.home }, ...args);
// The worker serves its Prometheus metrics, which the test reads as a scraper would.
const metric = (name: string, labels: Record<string, string>) => metricSum(h.metricsUrl!, name, labels);

before(() => h.start());
after(() => h.stop());

const [older, newer] = ['v1.35.4', 'v1.36.3'] as const;
const isControlPlane = (n: V1Node) => 'node-role.kubernetes.io/control-plane' in (n.metadata?.labels ?? {});

test("Cluster API's own quick-start ClusterClass and development Cluster, kinds swapped: capt apply runs it with Pod Security enforced by its patch, and a version change upgrades the control plane, then the workers", async () => {
  const file = join(h.home, 'capi-quick-start.yaml');
  await writeFile(file, capiQuickStart());
  const vars = (version: string) =>
    [
      'CLUSTER_NAME=qs',
      'NAMESPACE=default',
      `KUBERNETES_VERSION=${version}`,
      'CONTROL_PLANE_MACHINE_COUNT=1',
      'WORKER_MACHINE_COUNT=1',
    ].flatMap((v) => ['--var', v]);
  const created = await capt('apply', '-f', file, ...vars(older), '--wait', '--timeout', '5m');
  assert.equal(created.code, 0, created.stderr);
  // The class's failure domains, declared by its LocalCluster: the control-plane machine went to the first of those
  // marked for control planes.
  const controlPlaneDomains = async () =>
    (
      JSON.parse((await capt('get', 'machines', '-o', 'json')).stdout).items as {
        labels: Record<string, string>;
        failureDomain?: string;
        phase: string;
      }[]
    )
      .filter((m) => 'cluster.x-k8s.io/control-plane' in m.labels && m.phase !== 'Deleting')
      .map((m) => m.failureDomain);
  assert.deepEqual(await controlPlaneDomains(), ['fd1']);
  const kubeconfig = join(h.home, 'qs.kubeconfig');
  await writeFile(kubeconfig, (await capt('kubeconfig', 'qs')).stdout, { mode: 0o600 });
  const kube = new KubeClient(await readFile(kubeconfig, 'utf8'));
  const kubectl = (...args: string[]) =>
    run(kubectlFor(newer), ['--kubeconfig', kubeconfig, ...args]).then(
      (r) => ({ code: 0, out: r.stdout + r.stderr }),
      (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout + e.stderr }),
    );

  // The class's podSecurityStandard patch (on by default): the apiserver's admission configuration file, its
  // flag and its volume. The workload cluster's own apiserver enforces baseline and warns of restricted.
  const podSecurity = async (name: string) => {
    // Pods need the namespace's default ServiceAccount, which the controller-manager makes shortly after start.
    await until(
      'the default ServiceAccount',
      async () => (await kubectl('get', 'serviceaccount', 'default')).code === 0,
    );
    const privileged = await kubectl('run', `${name}-privileged`, '--image=busybox', '--privileged', '--restart=Never');
    assert.equal(privileged.code, 1, privileged.out);
    assert.match(privileged.out, /violates PodSecurity "baseline:latest": privileged/);
    const plain = await kubectl('run', `${name}-plain`, '--image=busybox', '--restart=Never');
    assert.equal(plain.code, 0, plain.out);
    assert.match(plain.out, /Warning: would violate PodSecurity "restricted:latest"/);
  };
  await podSecurity('created');

  // The class's two health checks (with their Machine conditions) watch the control plane and the workers.
  await until('both health checks to see their machine healthy', async () => {
    const described = (await capt('describe', 'cluster', 'qs')).stdout;
    return (described.match(/MachineHealthCheck\/qs-\S+ \(1\/1 healthy\)/g) ?? []).length === 2;
  });

  // capt's own metrics: each machine that reached Running, once, with the time it took.
  const cp = { cluster: 'qs', role: 'control-plane' };
  const worker = { cluster: 'qs', role: 'worker' };
  assert.deepEqual([await metric('capt_machines_running', cp), await metric('capt_machines_running', worker)], [1, 1]);
  assert.equal(await metric('capt_machine_running_seconds_count', { cluster: 'qs' }), 2);
  assert.ok((await metric('capt_machine_running_seconds_sum', { cluster: 'qs' })) > 0);
  // The fleet's gauges, counted from Temporal's visibility store: both machines Running, the MachineDeployment Ready.
  const running = { cluster: 'qs', namespace: 'default', phase: 'Running' };
  await until(
    'the fleet gauges counting both machines Running',
    async () =>
      (await metric('capt_cluster_machines', running)) === 2 &&
      (await metric('capt_machines', { phase: 'Running' })) === 2 &&
      (await metric('capt_owners', { kind: 'MachineDeployment', phase: 'Ready' })) === 1,
  );
  assert.equal(await metric('capt_machines', { phase: 'Provisioning' }), 0);
  // The SDK's: workflow tasks and activities this worker ran.
  assert.ok((await metric('temporal_workflow_task_execution_latency_count', {})) > 0);
  assert.ok((await metric('temporal_activity_execution_latency_count', {})) > 0);

  // Which machines were deleted and why, for a count that is off.
  const deletionStory = async () =>
    JSON.stringify({
      deleted: { cp: await metric('capt_machines_deleted', cp), worker: await metric('capt_machines_deleted', worker) },
      remediations: await metric('capt_remediations', { cluster: 'qs' }),
      machines: (await capt('get', 'machines', '-o', 'wide')).stdout,
    });

  const nodes = await kube.listNodes();
  assert.deepEqual(
    nodes.map((n) => `${isControlPlane(n) ? 'control-plane' : 'worker'} ${n.status!.nodeInfo!.kubeletVersion}`).sort(),
    [`control-plane ${older}`, `worker ${older}`],
  );

  // The upgrade: no worker runs the new version while the control plane's Node still runs the old one.
  let samples = 0;
  const watching = (async () => {
    for (;;) {
      const now = await kube.listNodes().catch(() => undefined);
      if (now) {
        samples++;
        const versions = (cp: boolean) =>
          now.filter((n) => isControlPlane(n) === cp).map((n) => n.status!.nodeInfo!.kubeletVersion);
        if (versions(false).includes(newer))
          assert.ok(!versions(true).includes(older), `a worker ran ${newer} beside a control plane of ${older}`);
        if ([...versions(true), ...versions(false)].every((v) => v === newer) && now.length === 2) return;
      }
      await sleep(250);
    }
  })();
  const waited = await capt('apply', '-f', file, ...vars(newer), '--wait', '--timeout', '5m');
  assert.equal(waited.code, 0, waited.stderr);
  await watching;
  assert.ok(samples > 5, `${samples} samples of the Nodes during the upgrade`);
  // Its replacement joined while the old machine held fd1: it went to fd2.
  assert.deepEqual(await controlPlaneDomains(), ['fd2']);
  // The new control-plane machine has the admission configuration too.
  await podSecurity('upgraded');

  // The upgrade replaced both machines: two more reached Running, and the two old ones are deleted (apply --wait
  // returns once the new ones run, when an old one may still be draining).
  assert.equal(await metric('capt_machines_running', { cluster: 'qs' }), 4);
  await until(
    'both old machines counted deleted',
    async () => (await metric('capt_machines_deleted', { cluster: 'qs' })) >= 2,
  );
  assert.equal(await metric('capt_machines_deleted', { cluster: 'qs' }), 2, await deletionStory());

  const deleted = await capt('delete', 'cluster', 'qs', '--wait', '--timeout', '5m');
  assert.equal(deleted.code, 0, deleted.stderr);
  assert.equal(await metric('capt_machines_deleted', { cluster: 'qs' }), 4);
  await until(
    "the deleted cluster's gauges at 0",
    async () => (await metric('capt_cluster_machines', running)) === 0 && (await metric('capt_machines', {})) === 0,
  );

  // Every metric the Grafana dashboard reads is one the worker serves (those counting failures and remediations
  // appear with their first event, which this run has none of).
  const dashboard = await readFile(join(__dirname, '../../../docs/grafana/capt-fleet.json'), 'utf8');
  const queried = new Set(
    [...dashboard.matchAll(/\b((?:capt|temporal)_[a-z_]+?)(?:_bucket|_count|_sum)?\b/g)].map((m) => m[1]!),
  );
  const eventOnly = [
    'capt_remediations',
    'temporal_workflow_task_execution_failed',
    'temporal_activity_execution_failed',
  ];
  const served = await (await fetch(h.metricsUrl!)).text();
  assert.deepEqual(
    [...queried].filter((name) => !eventOnly.includes(name) && !served.includes(`# TYPE ${name} `)),
    [],
    'the dashboard reads only metrics the worker serves',
  );
  assert.ok(queried.size >= 10, `the dashboard reads ${[...queried].join(', ')}`);
});
