import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { KubeClient, isNotFound } from '../../src/kube/kube-client';
import * as activities from '../activities/smoke-activities';
import { startKubeControlPlane, type KubeControlPlane } from '../fixtures/kube-control-plane';
import { bundle, startTemporal, testDataConverter } from '../fixtures/temporal';
import { spawnWorkerProcess } from '../fixtures/worker-process';
import { smokeWorkflow } from '../workflows';

let env: TestWorkflowEnvironment;
let kube: KubeControlPlane;
let workflows: WorkflowBundleWithSourceMap;
let home: string;
let kubeconfig: string;
const entries = (n: number): [string, string][] => Array.from({ length: n }, (_, i) => [`key${i}`, `value${i}`]);

before(async () => {
  home = await mkdtemp(join(tmpdir(), 'capt-home-'));
  process.env.CAPT_HOME = home;
  [env, kube, workflows] = await Promise.all([
    startTemporal(),
    startKubeControlPlane(),
    bundle(require.resolve('../workflows')),
  ]);
  kubeconfig = join(home, 'admin.kubeconfig');
  await writeFile(kubeconfig, kube.kubeconfig, { mode: 0o600 });
});

after(async () => {
  await Promise.all([env?.teardown(), kube?.stop()]);
  await rm(home, { recursive: true, force: true });
});

test('a workflow creates a Namespace and a ConfigMap in the real apiserver and reads them back', async () => {
  const taskQueue = `smoke-${Date.now()}`;
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: workflows,
    activities,
    dataConverter: testDataConverter(),
  });
  const result = await worker.runUntil(
    env.client.workflow.execute(smokeWorkflow, {
      taskQueue,
      workflowId: `smoke/${taskQueue}`,
      args: [{ kubeconfig, namespace: 'smoke-a', configMap: 'settings', entries: entries(3), pauseMs: 0 }],
    }),
  );
  assert.deepEqual(result.data, { key0: 'value0', key1: 'value1', key2: 'value2' });
  const client = new KubeClient(kube.kubeconfig);
  const ns = await client.ensureNamespace('smoke-a');
  assert.equal(ns.metadata!.uid, result.namespaceUid, 'the namespace the workflow saw is the one in the apiserver');
  assert.deepEqual((await client.getConfigMap('smoke-a', 'settings')).data, result.data);
});

test('the workflow survives its worker being killed with SIGKILL mid-activity and completes on a new worker', async () => {
  const taskQueue = `smoke-kill-${Date.now()}`;
  const bundlePath = join(home, 'workflow-bundle.js');
  await writeFile(bundlePath, workflows.code);
  const workerScript = join(__dirname, '../fixtures/worker-process-main.js');
  const first = await spawnWorkerProcess(workerScript, [env.address, taskQueue, bundlePath]);
  const handle = await env.client.workflow.start(smokeWorkflow, {
    taskQueue,
    workflowId: `smoke/${taskQueue}`,
    args: [{ kubeconfig, namespace: 'smoke-b', configMap: 'settings', entries: entries(8), pauseMs: 500 }],
  });
  const client = new KubeClient(kube.kubeconfig);
  // Kill only once the apiserver shows the activity half done: the kill really lands mid-run.
  let written = 0;
  for (
    const deadline = Date.now() + 60_000;
    written < 3 && Date.now() < deadline;
    await new Promise((r) => setTimeout(r, 100))
  ) {
    written = await client.getConfigMap('smoke-b', 'settings').then(
      (cm) => Object.keys(cm.data ?? {}).length,
      (err) => (isNotFound(err) ? 0 : Promise.reject(err)),
    );
  }
  assert.ok(written >= 3 && written < 8, `killed mid-activity after ${written} of 8 keys`);
  first.child.kill('SIGKILL');
  assert.equal(await first.exited, 'SIGKILL');
  assert.equal((await handle.describe()).status.name, 'RUNNING', 'the workflow outlives its worker');

  const second = await spawnWorkerProcess(workerScript, [env.address, taskQueue, bundlePath]);
  try {
    const result = await handle.result();
    assert.deepEqual(result.data, Object.fromEntries(entries(8)));
    // Heartbeats are throttled, so the last one recorded may trail the writes a little; it is never 0.
    assert.ok(
      result.resumedFrom >= 1 && result.resumedFrom <= written,
      `the retried activity resumed from its heartbeat (key ${result.resumedFrom} of ${written} written), not from 0`,
    );
    const history = await handle.fetchHistory();
    const attempts = history
      .events!.filter((e) => e.activityTaskStartedEventAttributes)
      .map((e) => e.activityTaskStartedEventAttributes!.attempt);
    assert.ok(attempts.includes(2), 'the interrupted activity ran a second attempt');
  } finally {
    await second.stop();
  }
});
