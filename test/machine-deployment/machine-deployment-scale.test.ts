import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Node } from '@kubernetes/client-node';
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { KubeClient } from '../../src/kube/kube-client';
import { clusterDir, machinesDir } from '../../providers/local/layout';
import { loadManifests } from '../../src/api/load-manifests';
import { failedMachines } from '../../src/client/capt-client';
import { ownerStatusAllPages } from '../../src/client/owner-status-pages';
import { ownerStatusQuery } from '../../src/contract/cluster-messages';
import { nodeHealthSignal, requestMachineDeletionSignal } from '../../src/contract/machine-messages';
import { clusterWorkflowId, machineDeploymentWorkflowId, machineWorkflowId } from '../../src/contract/workflow-ids';
import { AesGcmCodec } from '../../src/codec/aes-gcm-codec';
import { loadCodecKeys } from '../../src/codec/codec-keys';
import { startsPerRun } from '../../workflows/shared/machine-pool';
import { handOverWaitMs } from '../../workflows/shared/owner-runtime';
import { measureHistories } from '../fixtures/history-guard';
import { harnessWithClient } from '../fixtures/machine-harness';
import { until } from '../fixtures/until';

const root = join(__dirname, '../../..');
const suite = harnessWithClient();
const h = suite.harness;
const MD = 'big-md-0';
const target = 300;
const podSubnet = '10.128.0.0/14';
/** Whether an IPv4 CIDR lies inside 10.128.0.0/14. */
const inPodSubnet = (cidr: string) => /^10\.(128|129|130|131)\.\d+\.0\/24$/.test(cidr);

/** The names of the MachineDeployment's machines among machine workflows `capt get machines` lists. */
const deploymentMachines = (machines: { name: string; cluster: string }[]) =>
  machines.filter((m) => m.cluster === 'big' && m.name.startsWith(`${MD}-`)).map((m) => m.name);

/**
 * Machines report through the worker's coalescer (a local activity in their own task), never as external signals,
 * and the MachineDeployment's runs received them only as machineReports updates (how many ride together depends
 * on the load; unit/machine-reports checks the coalescing): an update waiting for the owner's next task is not in
 * its history, so it cannot fail the task that continues as new.
 */
async function assertReportsCoalesced(machines: string[]): Promise<void> {
  for (const name of machines.slice(0, 3)) {
    const events = (await h.env.client.workflow.getHandle(machineWorkflowId('default', name)).fetchHistory()).events!;
    assert.ok(
      !events.some((e) => e.signalExternalWorkflowExecutionInitiatedEventAttributes),
      `${name} signalled its owner from its history`,
    );
    assert.ok(events.filter((e) => e.markerRecordedEventAttributes).length >= 1, `${name}: its report`);
  }
  const signals: string[] = [];
  const updates: string[] = [];
  for await (const run of h.env.client.workflow.list({
    query: `WorkflowId = '${machineDeploymentWorkflowId('default', MD)}'`,
  })) {
    const history = await h.env.client.workflow.getHandle(run.workflowId, run.runId).fetchHistory();
    for (const e of history.events!) {
      if (e.workflowExecutionSignaledEventAttributes)
        signals.push(e.workflowExecutionSignaledEventAttributes.signalName ?? '');
      const accepted = e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name;
      if (accepted) updates.push(accepted);
    }
  }
  const batches = updates.filter((n) => n === 'machineReports').length;
  console.log(
    `the MachineDeployment's runs accepted ${batches} machineReports updates for ${machines.length} machines`,
  );
  assert.deepEqual(
    signals.filter((n) => n.startsWith('machineReport')),
    [],
    'no report came as a signal (one at a time or in batches)',
  );
  assert.ok(batches > 0, 'the reports reached the MachineDeployment as machineReports updates');
}

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** How a run that continued as new ended its hand-over: 'batch', 'waited', or what went wrong. */
function handOverEnding(events: HistoryEvent[], runId: string): string {
  const isBatch = (e: HistoryEvent) =>
    e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'machineReports';
  const waitAt = events
    .map((e) => Number(e.timerStartedEventAttributes?.startToFireTimeout?.seconds) * 1000 === handOverWaitMs)
    .lastIndexOf(true);
  if (waitAt < 0) return `${runId}: no wait`;
  const waitId = events[waitAt]!.timerStartedEventAttributes!.timerId;
  const final = events.slice(events.map((e) => !!e.workflowTaskCompletedEventAttributes).lastIndexOf(true) + 1);
  if (final.some(isBatch) && final.some((e) => e.timerCanceledEventAttributes?.timerId === waitId)) return 'batch';
  const firedAt = events.findIndex((e) => e.timerFiredEventAttributes?.timerId === waitId);
  if (firedAt < 0) return `${runId}: other`;
  // Batches taken by the tasks that ran while the wait did (after the task that started it, before it fired).
  const nextTask = events.findIndex((e, i) => i > waitAt && !!e.workflowTaskCompletedEventAttributes);
  const taken = nextTask < 0 ? 0 : events.slice(nextTask, firedAt).filter(isBatch).length;
  return taken > 0 ? `${runId}: waited past ${taken} batches` : 'waited';
}

/**
 * A run that must continue as new while machines have reports to make waits for the next batch (at most 2 s, a
 * timer) and ends in the task that takes it, so no batch meets the run's last task and is refused "workflow is
 * closing" (owner-runtime.ts). Every run that continued as new so far waited. One whose wait ran out took no batch in
 * a task after the one that started the wait: whether a batch comes within 2 s depends on the load, so a run may
 * end either way, but never by waiting past a batch it took.
 */
async function assertHandOver(): Promise<void> {
  const endings: string[] = [];
  for await (const run of h.env.client.workflow.list({
    query: `WorkflowId = '${machineDeploymentWorkflowId('default', MD)}' AND ExecutionStatus = 'ContinuedAsNew'`,
  })) {
    const events = (await h.env.client.workflow.getHandle(run.workflowId, run.runId).fetchHistory()).events!;
    endings.push(handOverEnding(events, run.runId));
  }
  console.log(`the MachineDeployment's runs that continued as new ended: ${endings.join(', ')}`);
  assert.ok(endings.length > 0, 'a run continued as new during the scale-up');
  assert.deepEqual(
    endings.filter((e) => e !== 'batch' && e !== 'waited'),
    [],
    'every run waited for a batch of reports before it continued as new, and ended in the task that took one',
  );
}

const providerMachines = async () =>
  (await readdir(machinesDir(clusterDir('default', 'big'))).catch(() => [] as string[])).filter((d) =>
    d.startsWith(`${MD}-`),
  ).length;

/**
 * A machine being deleted deletes its own Node and closes a moment later, before the Node watch's grace for a
 * missing Node ends (node-health-watch.ts): told at once, most of them used to get a "Node gone" signal they did not
 * need (34 of 40), some in their last workflow task, which it failed. Counted over 40 of the machines scaled away,
 * once a pass past the grace could have told them; a few slow ones under CI's lanes are let through.
 */
async function assertNoNodeGoneTells(before: string[]): Promise<void> {
  const kept = new Set(
    (await suite.client.ownerStatus('machinedeployment', 'default', MD)).machines.map((m) => m.name),
  );
  const scaledAway = new Set(before.filter((name) => !kept.has(name)));
  const deleted = [...scaledAway].slice(0, 40);
  await sleep(25_000);
  const told: string[] = [];
  for (const name of deleted) {
    const events = (await h.env.client.workflow.getHandle(machineWorkflowId('default', name)).fetchHistory()).events!;
    const asked = events.findIndex(
      (e) => e.workflowExecutionSignaledEventAttributes?.signalName === requestMachineDeletionSignal.name,
    );
    if (
      events.slice(asked).some((e) => e.workflowExecutionSignaledEventAttributes?.signalName === nodeHealthSignal.name)
    )
      told.push(name);
  }
  console.log(`machines scaled away and told their Node was gone: ${told.length} of ${deleted.length}`);
  assert.equal(deleted.length, 40);
  assert.ok(told.length <= 4, `told their own Node was gone: ${told.length} of 40: ${told.join(', ')}`);
  // Nor does the watch keep what it told them (it used to, for good): what it carries from attempt to attempt stays
  // bounded. Its heartbeats are throttled (24 s), so the checkpoint read may still name a few told while closing.
  const watch = (
    await h.env.client.workflow.getHandle(clusterWorkflowId('default', 'big')).describe()
  ).raw.pendingActivities?.find((a) => a.activityType?.name === 'watchNodeHealth');
  const [details] = await new AesGcmCodec(loadCodecKeys()).decode(watch!.heartbeatDetails!.payloads!);
  const remembered = Object.keys(defaultPayloadConverter.fromPayload<{ told: object }>(details!).told).filter((m) =>
    scaledAway.has(m),
  );
  console.log(`the watch's checkpoint names ${remembered.length} of the ${scaledAway.size} machines scaled away`);
  assert.ok(
    remembered.length <= scaledAway.size / 10,
    `the watch's checkpoint names ${remembered.length} of the ${scaledAway.size} machines scaled away`,
  );
}

test(`a MachineDeployment scales 2 -> ${target} -> 2 with continue-as-new while busy; no history or payload outgrows Temporal's warnings`, async () => {
  const text = await readFile(join(root, 'examples/quickstart.yaml'), 'utf8');
  // The quickstart's pod network (a /16, 256 node ranges of /24) cannot hold 300 nodes: this cluster asks for a /14.
  const [model] = loadManifests([{ file: 'quickstart.yaml', text }], {
    CLUSTER_NAME: 'big',
    CONTROL_PLANE_MACHINE_COUNT: '1',
    WORKER_MACHINE_COUNT: '2',
    POD_CIDR: podSubnet,
  });
  assert.equal(model!.podSubnet, podSubnet);
  await suite.client.apply([model!]);
  const ready = await suite.client.waitForCluster('default', 'big', () => undefined, 600_000);
  assert.equal(ready.phase, 'Provisioned', failedMachines(ready));

  const handle = h.env.client.workflow.getHandle(machineDeploymentWorkflowId('default', MD));
  const started = Date.now();
  // Half first, the rest once reports flow: the run then starts its last machines and must continue as new while
  // a hundred more are still to report (assertHandOver).
  await suite.client.scale('machinedeployment', 'default', MD, target / 2);
  await until(
    'a few machines of the first half Running',
    () => suite.client.ownerStatus('machinedeployment', 'default', MD),
    { done: (s) => s.readyReplicas >= 20, timeoutMs: 600_000, intervalMs: 500, describe: (s) => s?.step ?? '' },
  );
  await suite.client.scale('machinedeployment', 'default', MD, target);
  // Runs seen while the scale-up was still under way: more than one means continue-as-new while busy.
  const busyRuns = new Set<string>();
  let peak = 0;
  for (;;) {
    const [s, description, dirs] = await Promise.all([
      suite.client.ownerStatus('machinedeployment', 'default', MD),
      handle.describe(),
      providerMachines(),
    ]);
    peak = Math.max(peak, dirs);
    if (s.readyReplicas === target && s.machines.length === target) break;
    busyRuns.add(description.runId);
    assert.equal(s.failedMachines, 0, `no machine fails: ${s.step}`);
    assert.ok(
      Date.now() - started < 1_200_000,
      `scale-up to ${target} within 20 min: ${s.readyReplicas} ready; ${s.step}`,
    );
    await sleep(1000);
  }
  const seconds = (Date.now() - started) / 1000;
  const figures = await measureHistories(h.env.client);
  console.log(
    `scale-up to ${target}: ${seconds.toFixed(0)} s (${(target / seconds).toFixed(1)} machines/s); ${busyRuns.size} MachineDeployment runs while busy; at most ${peak} provider machines; largest history ${figures.maxHistoryBytes} bytes / ${figures.maxHistoryEvents} events (${figures.largest}); largest payload ${figures.maxPayloadBytes} bytes`,
  );
  assert.ok(
    busyRuns.size >= Math.ceil(target / startsPerRun),
    `continue-as-new during the scale-up: runs seen ${busyRuns.size}`,
  );
  // The owner's continued runs keep its workflow task timeout (build-upgrade.ts, ownerWorkflowTaskTimeout).
  const config = (await handle.describe()).raw.executionConfig;
  assert.equal(
    Number(config?.defaultWorkflowTaskTimeout?.seconds),
    60,
    'the continued run keeps the 60 s task timeout',
  );
  assert.ok(peak <= target, `never more machines than asked for: ${peak}`);
  const workflows = deploymentMachines(await suite.client.listMachines('default'));
  await assertReportsCoalesced(workflows);
  await assertHandOver();
  assert.equal(await providerMachines(), target, 'exactly one provider machine per replica');
  assert.equal(workflows.length, target, 'one machine workflow per replica');
  // A Node for each machine (the control plane's and the workers'), each with a podCIDR from
  // Cluster.spec.clusterNetwork: it reached kubeadm, and the controller-manager hands out node ranges from it.
  const kube = new KubeClient(await suite.client.kubeconfig('default', 'big'));
  const outside = (nodes: V1Node[] = []) =>
    nodes.filter((n) => !inPodSubnet(n.spec?.podCIDR ?? '')).map((n) => `${n.metadata!.name}: ${n.spec?.podCIDR}`);
  await until(`${target + 1} Nodes, each with a podCIDR in ${podSubnet}`, () => kube.listNodes(), {
    done: (nodes) => nodes.length === target + 1 && outside(nodes).length === 0,
    timeoutMs: 60_000,
    intervalMs: 2000,
    describe: (nodes) => `${nodes?.length} Nodes; outside ${podSubnet}: ${outside(nodes).slice(0, 5).join(', ')}`,
  });

  // Records travel in pages (owner-status-page.ts): pages of 64 hold each record once, as the whole answer an
  // earlier build's client gets (no page asked) holds them; an update's answer, kept in history, holds none.
  const whole = await handle.query(ownerStatusQuery);
  const first = await handle.query(ownerStatusQuery, { limit: 64 });
  assert.deepEqual([first.machines.length, first.machinesTotal, !!first.machinesNext], [64, target, true]);
  const paged = await ownerStatusAllPages(handle, 64);
  assert.deepEqual(
    paged.machines.map((m) => m.name).sort(),
    whole.machines.map((m) => m.name).sort(),
    'the pages together hold every record once',
  );
  const answer = await suite.client.scale('machinedeployment', 'default', MD, 2);
  assert.deepEqual([answer.machines.length, answer.machinesTotal], [0, target], "the scale update's answer");
  for (
    let s = await suite.client.ownerStatus('machinedeployment', 'default', MD);
    s.machines.length !== 2 || s.readyReplicas !== 2;
    s = await suite.client.ownerStatus('machinedeployment', 'default', MD)
  ) {
    assert.ok(Date.now() - started < 1_800_000, `scale-down to 2: ${s.machines.length} machines; ${s.step}`);
    await sleep(1000);
  }
  assert.equal(await providerMachines(), 2, 'the scale-down leaves no provider machine behind');
  await assertNoNodeGoneTells(workflows);

  await suite.client.deleteCluster('default', 'big');
  await suite.client.waitForDeletion('default', 'big', () => undefined, 600_000);
  assert.equal(await providerMachines(), 0);
});
