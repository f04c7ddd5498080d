import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { changeMachineUpdate, deleteMachineUpdate, machineStatusQuery } from '../../src/contract/machine-messages';
import { MachineHarness } from '../fixtures/machine-harness';
import { until } from '../fixtures/until';
import { Workloads } from '../fixtures/workloads';

const h = new MachineHarness('dr');
let w: Workloads;
before(async () => {
  await h.start();
  w = new Workloads(h.driver.kubeconfig());
});
after(() => h.stop());

test('drain: a budget blocks it and says so; relaxed, evicted pods move to the other node; DaemonSet pods are skipped', async () => {
  const a = await h.startMachine(h.spec('dr-a'));
  const b = await h.startMachine(h.spec('dr-b'));
  const [sa, sb] = [
    await h.waitFor(a, (s) => s.phase === 'Running', 'a Running'),
    await h.waitFor(b, (s) => s.phase === 'Running', 'b Running'),
  ];
  // Keep B out of the picture until the pods have landed on A.
  await h.kube.cordon(sb.nodeRef!);
  await w.deployment('default', 'api', 3);
  await w.daemonSet('default', 'agent');
  await until('3 api pods running on A', async () => (await w.runningOn('default', 'api'))[sa.nodeRef!] === 3);
  await until('the DaemonSet pod on A', async () => (await w.runningOn('default', 'agent'))[sa.nodeRef!] === 1);
  await h.kube.patchNode(sb.nodeRef!, { spec: { unschedulable: false } });
  await w.budget('default', 'api-pdb', 'api', 3);

  await a.executeUpdate(deleteMachineUpdate, { args: [{}] });
  const blocked = await h.waitFor(
    a,
    (s) => /disruption budget/.test(s.conditions.find((c) => c.type === 'Deleting')?.message ?? ''),
    'the drain to report the budget',
  );
  const deleting = blocked.conditions.find((c) => c.type === 'Deleting')!;
  assert.equal(deleting.reason, 'Draining');
  assert.match(deleting.message!, /pod default\/api-[a-z0-9-]+ blocked by disruption budget: .*api-pdb/);
  const currentDetails = await currentDetailsOf(a);
  assert.match(currentDetails, /draining node dr-a.*api-pdb/s, 'the Temporal UI shows what blocks the drain');
  assert.deepEqual(await w.runningOn('default', 'api'), { [sa.nodeRef!]: 3 }, 'nothing was evicted past the budget');
  assert.equal(
    (await w.runningOn('default', 'agent'))[sa.nodeRef!],
    1,
    'the DaemonSet pod on A was passed over, not evicted',
  );

  await w.relaxBudget('default', 'api-pdb', 2);
  const final = await a.result();
  assert.equal(final.phase, 'Deleted');
  assert.deepEqual(
    await w.runningOn('default', 'api'),
    { [sb.nodeRef!]: 3 },
    'the scheduler placed every evicted pod on B',
  );
  assert.equal((await w.runningOn('default', 'agent'))[sb.nodeRef!], 1, 'the DaemonSet pod on B is untouched');
  await w.removeApp('default', 'api', 'api-pdb');
  await b.executeUpdate(deleteMachineUpdate, { args: [{}] });
  await b.result();
});

test('a drain timeout lets deletion continue and says the drain was cut short', async () => {
  const m = await h.startMachine(h.spec('dr-c', { nodeDrainTimeoutSeconds: 5 }));
  const s = await h.waitFor(m, (x) => x.phase === 'Running', 'Running');
  await w.deployment('default', 'pinned', 1);
  await until('the pinned pod on C', async () => (await w.runningOn('default', 'pinned'))[s.nodeRef!] === 1);
  await w.budget('default', 'pinned-pdb', 'pinned', 1);
  await m.executeUpdate(deleteMachineUpdate, { args: [{}] });
  const final = await m.result();
  assert.equal(final.phase, 'Deleted');
  assert.match(
    final.conditions.find((c) => c.type === 'Deleting')!.message!,
    /drain skipped: nodeDrainTimeout 5s expired with 1 pods left/,
  );
  await w.removeApp('default', 'pinned', 'pinned-pdb');
});

test('pre-drain and pre-terminate hooks hold deletion until their annotations are removed', async () => {
  const preDrain = 'pre-drain.delete.hook.machine.cluster.x-k8s.io/backup';
  const preTerminate = 'pre-terminate.delete.hook.machine.cluster.x-k8s.io/detach';
  const m = await h.startMachine(h.spec('dr-d', { annotations: { [preDrain]: 'team-a', [preTerminate]: 'team-b' } }));
  await h.waitFor(m, (x) => x.phase === 'Running', 'Running');
  await m.executeUpdate(deleteMachineUpdate, { args: [{}] });
  const held = await h.waitFor(
    m,
    (x) => x.conditions.find((c) => c.type === 'Deleting')?.reason === 'WaitingForPreDrainHook',
    'pre-drain hold',
  );
  assert.match(held.conditions.find((c) => c.type === 'Deleting')!.message!, /backup/);
  await sleep(2000);
  assert.equal(
    (await h.waitFor(m, () => true, 'status')).conditions.find((c) => c.type === 'Deleting')!.reason,
    'WaitingForPreDrainHook',
    'still held',
  );

  await m.executeUpdate(changeMachineUpdate, { args: [{ annotations: { [preTerminate]: 'team-b' } }] });
  const held2 = await h.waitFor(
    m,
    (x) => x.conditions.find((c) => c.type === 'Deleting')?.reason === 'WaitingForPreTerminateHook',
    'pre-terminate hold',
  );
  assert.ok(held2.nodeRef);
  assert.ok(
    await h.provider.describeMachine(h.driver.ref('dr-d')),
    'infrastructure still exists while the pre-terminate hook holds',
  );
  await m.executeUpdate(changeMachineUpdate, { args: [{ annotations: {} }] });
  assert.equal((await m.result()).phase, 'Deleted');
  assert.equal(await h.provider.describeMachine(h.driver.ref('dr-d')), undefined);
});

test('a Node with a volume attached holds deletion after the drain until it detaches; one without goes straight on', async () => {
  const m = await h.startMachine(h.spec('dr-v'));
  const s = await h.waitFor(m, (x) => x.phase === 'Running', 'Running');
  await h.kube.patchNodeStatus(s.nodeRef!, {
    status: { volumesAttached: [{ name: 'kubernetes.io/csi/disk.example^vol-1', devicePath: '' }] },
  });
  await m.executeUpdate(deleteMachineUpdate, { args: [{}] });
  const held = await h.waitFor(
    m,
    (x) => x.conditions.find((c) => c.type === 'Deleting')?.reason === 'WaitingForVolumeDetach',
    'the volume wait',
  );
  await sleep(2000);
  assert.equal(
    (await h.waitFor(m, () => true, 'status')).conditions.find((c) => c.type === 'Deleting')!.reason,
    'WaitingForVolumeDetach',
    'still held',
  );
  assert.ok(
    held.nodeRef && (await h.provider.describeMachine(h.driver.ref('dr-v'))),
    'the infrastructure waits for the volume',
  );
  await h.kube.patchNodeStatus(s.nodeRef!, { status: { volumesAttached: null } });
  assert.equal((await m.result()).phase, 'Deleted');

  const plain = await h.startMachine(h.spec('dr-w'));
  await h.waitFor(plain, (x) => x.phase === 'Running', 'Running');
  await plain.executeUpdate(deleteMachineUpdate, { args: [{}] });
  await plain.result();
  const activities = (await plain.fetchHistory())
    .events!.map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name)
    .filter(Boolean);
  assert.ok(
    activities.includes('drainNode') && !activities.includes('waitForVolumeDetach'),
    `drained, no volume wait: ${activities.join(', ')}`,
  );
});

test('a machine deleted mid-boot deletes the Node its kubelet registered, found by providerID', async () => {
  const m = await h.startMachine(
    h.spec('dr-e', { infrastructure: { kind: 'LocalMachineTemplate', spec: { bootDelaySeconds: 600 } } }),
  );
  // Booting, its infrastructure exists at the provider, but the machine learns its providerID only once it bootstrapped.
  const booting = await until('infrastructure', () =>
    h.provider.describeMachine({ namespace: 'default', cluster: 'dr', name: 'dr-e' }),
  );
  assert.equal((await m.query(machineStatusQuery)).providerID, undefined, 'the machine has no providerID yet');
  // A kubelet that registered but is not Ready yet: the machine has no nodeRef for it.
  await h.kube.registerNode({ metadata: { name: 'dr-e-early' }, spec: { providerID: booting!.providerID } });
  await m.executeUpdate(deleteMachineUpdate, { args: [{}] });
  assert.equal((await m.result()).phase, 'Deleted');
  assert.equal(await h.kube.getNode('dr-e-early'), undefined, 'the Node left with its machine');
});

/** What the Temporal UI shows as the workflow's current details (the built-in metadata query). */
async function currentDetailsOf(handle: { query<T>(name: string): Promise<T> }): Promise<string> {
  return (await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata')).currentDetails ?? '';
}
