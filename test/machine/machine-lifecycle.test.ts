import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, test } from 'node:test';
import type { ApplicationFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { changeMachineUpdate, deleteMachineUpdate, reportedStatusMemo } from '../../src/contract/machine-messages';
import type { MachineStatus } from '../../src/contract/machine';
import { encryptedEncoding } from '../../src/codec/aes-gcm-codec';
import { clusterDir, machineDir } from '../../providers/local/layout';
import { MachineHarness } from '../fixtures/machine-harness';
import { payloadText } from '../fixtures/history-guard';

const h = new MachineHarness('lc');
const EventType = temporal.api.enums.v1.EventType;
before(() => h.start());
after(() => h.stop());

test('create -> Running: nodeRef set, labels synced, uninitialized taint removed; delete -> Deleted, in under 150 history events', async () => {
  const spec = h.spec('lc-w-0', {
    labels: { 'node.cluster.x-k8s.io/pool': 'blue', 'app.example.com/ignored': 'x' },
    annotations: { 'example.com/owner': 'team-a' },
  });
  const handle = await h.startMachine(spec);
  const running = await h.waitFor(handle, (s) => s.phase === 'Running', 'Running');
  assert.ok(running.nodeRef, 'nodeRef is set');
  assert.equal(running.providerID, 'local://default/lc/lc-w-0');
  assert.ok(running.conditions.find((c) => c.type === 'Ready')?.status === 'True', JSON.stringify(running.conditions));
  // Its status as of its last report is in its memo, for a describe (the bridge reads it so), and only as ciphertext.
  const reported = (await handle.describe()).memo?.[reportedStatusMemo] as MachineStatus | undefined;
  assert.equal(reported?.phase, 'Running');
  assert.equal(reported?.nodeRef, running.nodeRef);
  assert.equal(reported?.providerID, running.providerID);
  assert.ok(
    reported.sequence >= 1 && reported.sequence <= running.sequence,
    `${reported.sequence} ${running.sequence}`,
  );
  const raw = await h.env.client.workflowService.describeWorkflowExecution({
    namespace: h.env.client.options.namespace,
    execution: { workflowId: handle.workflowId },
  });
  const memo = raw.workflowExecutionInfo?.memo?.fields?.[reportedStatusMemo];
  assert.equal(Buffer.from(memo?.metadata?.encoding ?? []).toString(), encryptedEncoding);

  const node = (await h.kube.getNode(running.nodeRef!))!;
  assert.equal(node.spec?.providerID, running.providerID);
  assert.equal(
    node.metadata?.labels?.['node.cluster.x-k8s.io/pool'],
    'blue',
    'labels in the node.cluster.x-k8s.io domain are synced',
  );
  assert.equal(node.metadata?.labels?.['app.example.com/ignored'], undefined, 'other labels are not');
  assert.equal(node.metadata?.annotations?.['example.com/owner'], 'team-a');
  assert.deepEqual(
    (node.spec?.taints ?? []).filter((t) => t.key === 'node.cluster.x-k8s.io/uninitialized'),
    [],
    'uninitialized taint removed',
  );

  const description = await handle.describe();
  assert.equal(description.searchAttributes.CaptPhase?.[0], 'Running');
  assert.equal(description.searchAttributes.CaptKind?.[0], 'Machine');
  assert.equal(description.searchAttributes.CaptCluster?.[0], 'lc');

  const deleting = await handle.executeUpdate(deleteMachineUpdate, { args: [{}] });
  assert.equal(deleting.phase, 'Deleting');
  const final = await handle.result();
  assert.equal(final.phase, 'Deleted');
  assert.equal(await h.kube.getNode(running.nodeRef!), undefined, 'the Node is deleted');
  assert.equal(
    existsSync(machineDir(clusterDir('default', 'lc'), 'lc-w-0')),
    false,
    'the machine is gone from the provider',
  );
  // Its bootstrap data was rendered inside the provisioning call: the join token is in no payload of its history.
  const history = (await handle.fetchHistory()).events!;
  const scheduled = history.flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
  assert.ok(!(await payloadText(handle)).includes(h.driver.secrets.bootstrapToken), 'the join token is in no history');
  assert.equal(scheduled[0], 'provisionBootstrappedMachine', scheduled.join(', '));
  const events = history.length;
  console.log(`history events for create + delete: ${events}`);
  assert.ok(events < 150, `history has ${events} events`);
});

test('a failing bootstrap ends in Failed with BootstrapFailed and the command output, in bounded time', async () => {
  const started = Date.now();
  const handle = await h.startMachine(
    h.spec('lc-bad', {
      bootstrap: {
        role: 'join',
        controlPlaneEndpoint: h.driver.endpoint,
        config: { preKubeadmCommands: ['echo "mirror unreachable" >&2; exit 42'] },
      },
    }),
  );
  const failed = await h.waitFor(handle, (s) => s.phase === 'Failed', 'Failed', 60_000);
  const exec = failed.conditions.find((c) => c.type === 'BootstrapExecSucceeded')!;
  assert.equal(exec.status, 'False');
  assert.equal(exec.reason, 'BootstrapFailed');
  assert.match(exec.message!, /exited 42: mirror unreachable/);
  console.log(`bootstrap failure reported after ${Date.now() - started} ms`);
  // It waits to be deleted rather than retrying: still Failed a moment later, with one boot only.
  await new Promise((r) => setTimeout(r, 2000));
  assert.equal((await h.waitFor(handle, () => true, 'status')).phase, 'Failed');
  await handle.executeUpdate(deleteMachineUpdate, { args: [{}] });
  assert.equal((await handle.result()).phase, 'Deleted');
});

test('an unsupported Kubernetes version fails the machine with the versions the provider has', async () => {
  const handle = await h.startMachine(h.spec('lc-old', { version: 'v1.19.0' }));
  const failed = await h.waitFor(handle, (s) => s.phase === 'Failed', 'Failed', 60_000);
  const infra = failed.conditions.find((c) => c.type === 'InfrastructureReady')!;
  assert.equal(infra.reason, 'UnsupportedVersion');
  assert.match(
    infra.message!,
    /v1\.19\.0 is not available on the local provider: it can run v1\.\d+\.\d+, v1\.\d+\.\d+/,
  );
  await handle.executeUpdate(deleteMachineUpdate, { args: [{}] });
  await handle.result();
});

test('labels change in place and reach the Node; a version change is refused with a clear message and changes nothing', async () => {
  const handle = await h.startMachine(h.spec('lc-mut'));
  const running = await h.waitFor(handle, (s) => s.phase === 'Running', 'Running');
  await handle.executeUpdate(changeMachineUpdate, { args: [{ labels: { 'node-role.kubernetes.io/worker': '' } }] });
  // Step back at Running means the sync activity's completion is in history, so nothing more is due.
  await h.waitFor(
    handle,
    (s) => s.stepReason === 'Running' && s.labels['node-role.kubernetes.io/worker'] === '',
    'label applied and synced',
  );
  const deadline = Date.now() + 30_000;
  while (
    Date.now() < deadline &&
    (await h.kube.getNode(running.nodeRef!))?.metadata?.labels?.['node-role.kubernetes.io/worker'] === undefined
  )
    await new Promise((r) => setTimeout(r, 300));
  assert.equal((await h.kube.getNode(running.nodeRef!))?.metadata?.labels?.['node-role.kubernetes.io/worker'], '');
  const before = (await handle.fetchHistory()).events!.length;
  const rejection = (pattern: RegExp) => (err: Error) => {
    assert.equal((err.cause as ApplicationFailure).type, 'InvalidSpec');
    assert.match((err.cause as ApplicationFailure).message, pattern);
    return true;
  };
  await assert.rejects(
    handle.executeUpdate(changeMachineUpdate, { args: [{ version: 'v1.30.0' }] }),
    rejection(
      /version cannot change on an existing Machine; change the owning MachineDeployment or control plane instead/,
    ),
  );
  await assert.rejects(
    handle.executeUpdate(changeMachineUpdate, { args: [{ nodeDrainTimeoutSeconds: -5 }] }),
    rejection(/nodeDrainTimeoutSeconds must be a number of seconds >= 0/),
  );
  assert.equal((await h.waitFor(handle, () => true, 'status')).version, h.version, 'the version is unchanged');
  // A rejection by the validator leaves the update's speculative workflow task with nothing to write, so the
  // server discards it whole: no event at all, not even a workflow task's.
  const written = (await handle.fetchHistory()).events!.slice(before).map((e) => EventType[e.eventType ?? 0]);
  assert.deepEqual(written, [], 'rejected updates write nothing to history');
  await handle.executeUpdate(deleteMachineUpdate, { args: [{}] });
  await handle.result();
});
