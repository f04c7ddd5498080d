import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { deleteMachineUpdate } from '../../src/temporal/machine-messages';
import { clusterDir, machineDir } from '../../providers/local/layout';
import { MachineHarness } from '../fixtures/machine-harness';

const h = new MachineHarness('lc');
before(() => h.start());
after(() => h.stop());

test('create -> Running: nodeRef set, labels synced, uninitialized taint removed; delete -> Deleted, in under 150 history events', async () => {
  const spec = h.spec('lc-w-0', { labels: { 'node.cluster.x-k8s.io/pool': 'blue', 'app.example.com/ignored': 'x' }, annotations: { 'example.com/owner': 'team-a' } });
  const handle = await h.startMachine(spec);
  const running = await h.waitFor(handle, (s) => s.phase === 'Running', 'Running');
  assert.ok(running.nodeRef, 'nodeRef is set');
  assert.equal(running.providerID, 'local://default/lc/lc-w-0');
  assert.ok(running.conditions.find((c) => c.type === 'Ready')?.status === 'True', JSON.stringify(running.conditions));

  const node = (await h.kube.getNode(running.nodeRef!))!;
  assert.equal(node.spec?.providerID, running.providerID);
  assert.equal(node.metadata?.labels?.['node.cluster.x-k8s.io/pool'], 'blue', 'labels in the node.cluster.x-k8s.io domain are synced');
  assert.equal(node.metadata?.labels?.['app.example.com/ignored'], undefined, 'other labels are not');
  assert.equal(node.metadata?.annotations?.['example.com/owner'], 'team-a');
  assert.deepEqual((node.spec?.taints ?? []).filter((t) => t.key === 'node.cluster.x-k8s.io/uninitialized'), [], 'uninitialized taint removed');

  const description = await handle.describe();
  assert.equal(description.searchAttributes.CaptPhase?.[0], 'Running');
  assert.equal(description.searchAttributes.CaptKind?.[0], 'Machine');
  assert.equal(description.searchAttributes.CaptCluster?.[0], 'lc');

  const deleting = await handle.executeUpdate(deleteMachineUpdate, { args: [{}] });
  assert.equal(deleting.phase, 'Deleting');
  const final = await handle.result();
  assert.equal(final.phase, 'Deleted');
  assert.equal(await h.kube.getNode(running.nodeRef!), undefined, 'the Node is deleted');
  assert.equal(existsSync(machineDir(clusterDir('default', 'lc'), 'lc-w-0')), false, 'the machine is gone from the provider');
  const events = (await handle.fetchHistory()).events!.length;
  console.log(`history events for create + delete: ${events}`);
  assert.ok(events < 150, `history has ${events} events`);
});
