import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  machineObject,
  machineObjectChanged,
  machineObjectDue,
  provisioningUnshownMs,
  taintsGone,
  reportSequenceAnnotation,
} from '../../src/bridge/machine-objects';
import type { ApiObject } from '../../src/bridge/management-client';
import { MirroredReports } from '../../src/bridge/mirrored-reports';
import { MachinePhase, type MachineStatus } from '../../src/contract/machine';
import type { MachineRecord } from '../../src/contract/owner';

const owner: ApiObject = {
  apiVersion: 'controlplane.cluster.x-k8s.io/v1beta2',
  kind: 'KubeadmControlPlane',
  metadata: { name: 'one-control-plane', namespace: 'default', uid: 'kcp-uid' },
};
const machine = (changes: Partial<MachineStatus> = {}): MachineStatus =>
  ({
    namespace: 'default',
    name: 'one-control-plane-abcde',
    cluster: 'one',
    phase: MachinePhase.Provisioning,
    version: 'v1.36.3',
    addresses: [],
    createdAt: '2026-11-26T10:00:00Z',
    conditions: [],
    step: 'bootstrap',
    stepReason: 'Starting',
    labels: { 'cluster.x-k8s.io/cluster-name': 'one' },
    annotations: {},
    sequence: 1,
    ...changes,
  }) as MachineStatus;
/** The object as the apiserver returns it once written: its server fields and a label another tool added. */
const stored = (m: MachineStatus): ApiObject => {
  const o = machineObject(m, owner, 'LocalMachine');
  return { ...o, metadata: { ...o.metadata, uid: 'm-uid', labels: { ...o.metadata.labels, 'team/x': 'y' } } };
};

test("a report that changes only a machine's status needs no write of its object's metadata or spec", () => {
  const existing = stored(machine());
  const running = machine({ phase: MachinePhase.Running, sequence: 2, addresses: ['10.0.0.2'], nodeRef: 'n' });
  assert.equal(machineObjectChanged(existing, machineObject(running, owner, 'LocalMachine')), false);
  // Each of these is the object's to show, and is written.
  const changes: Partial<MachineStatus>[] = [
    { providerID: 'local://default/one/one-control-plane-abcde' },
    { version: 'v1.36.4' },
    { failureDomain: 'fd-2' },
    { labels: { 'cluster.x-k8s.io/cluster-name': 'one', tier: 'a' } },
    { annotations: { 'cluster.x-k8s.io/delete-machine': 'yes' } },
    { taints: [{ key: 'example.com/dedicated', effect: 'NoSchedule', propagation: 'Always' }] },
  ];
  for (const change of changes)
    assert.equal(
      machineObjectChanged(existing, machineObject(machine({ ...change, sequence: 3 }), owner, 'LocalMachine')),
      true,
      JSON.stringify(change),
    );
  // Taints the machine no longer has: the object is written, naming them gone.
  const tainted = stored(machine({ taints: [{ key: 'k', effect: 'NoSchedule', propagation: 'Always' }] }));
  assert.deepEqual(tainted.spec?.taints, [{ key: 'k', effect: 'NoSchedule', propagation: 'Always' }]);
  assert.equal(machineObjectChanged(tainted, machineObject(machine(), owner, 'LocalMachine')), true);
  assert.equal(taintsGone(tainted, machineObject(machine(), owner, 'LocalMachine')), true);
  const otherOwner = { ...owner, metadata: { ...owner.metadata, uid: 'kcp-2' } };
  assert.equal(machineObjectChanged(existing, machineObject(machine(), otherOwner, 'LocalMachine')), true);
});

test('the report an object shows is remembered by this bridge, else read from the object, and forgotten with it', () => {
  const reports = new MirroredReports();
  const o = stored(machine({ sequence: 4 }));
  assert.equal(o.metadata.annotations?.[reportSequenceAnnotation], '4');
  assert.equal(reports.sequence(o), '4');
  assert.equal(reports.sequence(undefined), undefined);
  reports.note(o, 6);
  assert.equal(reports.sequence(o), '6');
  // The same name made again is another object.
  const again = { ...o, metadata: { ...o.metadata, uid: 'm-uid-2' } };
  assert.equal(reports.sequence(again), '4');
  reports.keepOnly([again]);
  assert.equal(reports.sequence(o), '4');
});

test('a provisioning machine gets its object once it runs, or once it has provisioned for 10 s', () => {
  const made = Date.parse('2026-11-26T10:00:00Z');
  const record = (phase: MachinePhase): MachineRecord => ({
    name: 'one-md-0-abcde',
    templateHash: 'h',
    version: 'v1.36.3',
    createdAt: new Date(made).toISOString(),
    phase,
    deleting: false,
    marked: false,
    sequence: 1,
  });
  assert.equal(machineObjectDue(record(MachinePhase.Provisioning), made + provisioningUnshownMs - 1), false);
  assert.equal(machineObjectDue(record(MachinePhase.Provisioning), made + provisioningUnshownMs), true);
  for (const phase of [MachinePhase.Running, MachinePhase.Failed, MachinePhase.Deleting])
    assert.equal(machineObjectDue(record(phase), made), true, phase);
});
