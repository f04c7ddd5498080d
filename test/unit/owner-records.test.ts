import assert from 'node:assert/strict';
import { test } from 'node:test';
import { controlPlaneCleanupHook, MachinePhase, type MachineStatus } from '../../src/contract/machine';
import type { ControlPlaneModel } from '../../src/api/model';
import { controlPlaneMachineLabels } from '../../src/contract/machine-labels';
import { controlPlaneMachineFields } from '../../workflows/control-plane/control-plane-workflow';
import { pendingTemplateChange } from '../../workflows/shared/in-place-change';
import type { MachineRecord, OwnerStatus } from '../../src/contract/owner';
import { mergeTemplateChange } from '../../workflows/machine/machine-change';
import { machineWorkflowType } from '../../src/contract/workflow-ids';
import { machineWorkflow } from '../../workflows/machine/machine-workflow';
import { deletionHeld, machineReport, reportKey, startedByOwnerKey } from '../../workflows/machine/machine-report';
import {
  availability,
  newRecord,
  recordMachineReport,
  recordMachineReports,
} from '../../workflows/shared/machine-pool';
import { summaryKey } from '../../workflows/shared/owner-summary';
import { someNames } from '../../workflows/shared/some-names';

const status = (phase: MachinePhase, extra: Partial<MachineStatus> = {}): MachineStatus => ({
  namespace: 'default',
  name: 'web-abc12',
  cluster: 'prod',
  phase,
  version: 'v1.36.3',
  addresses: ['127.1.0.9'],
  createdAt: '2026-11-22T10:00:00.000Z',
  conditions: [],
  step: 'working',
  stepReason: 'Running',
  labels: {},
  annotations: {},
  sequence: 0,
  ...extra,
});

test('a machine reports to its owner only when a planning field changes: not for each phase before Running', () => {
  assert.equal(
    reportKey(status(MachinePhase.Pending)),
    reportKey(status(MachinePhase.Provisioned)),
    'Pending and Provisioned read the same to the owner',
  );
  assert.notEqual(reportKey(status(MachinePhase.Provisioned)), reportKey(status(MachinePhase.Running)));
  assert.notEqual(
    reportKey(status(MachinePhase.Running)),
    reportKey(status(MachinePhase.Running, { annotations: { 'cluster.x-k8s.io/delete-machine': '' } })),
    'the delete mark is reported',
  );
  assert.equal(
    reportKey(status(MachinePhase.Running)),
    reportKey(status(MachinePhase.Running, { step: 'another step', labels: { a: 'b' } })),
    'steps and labels are not',
  );
  assert.equal(
    machineReport(status(MachinePhase.Provisioning), 1).address,
    undefined,
    'the address travels once the machine runs',
  );
  assert.equal(machineReport(status(MachinePhase.Running), 1).address, '127.1.0.9');
});

test('a blocker is one short line, whatever the drain said', () => {
  const long = `draining node web-abc12: ${'pod shop/api-1 blocked by disruption budget api-pdb; '.repeat(20)}`;
  const deleting = status(MachinePhase.Deleting, {
    conditions: [{ type: 'Deleting', status: 'True', reason: 'Draining', message: long }],
  });
  const blocker = machineReport(deleting, 3, true).blocker!;
  assert.ok(blocker.length <= 200 && blocker.startsWith('draining node web-abc12: pod shop/api-1'), blocker);
  assert.equal(
    machineReport(deleting, 3, false).blocker,
    undefined,
    'a deletion passing its gates is no news to the owner',
  );
  assert.equal(
    reportKey(deleting),
    reportKey(
      status(MachinePhase.Deleting, {
        conditions: [{ type: 'Deleting', status: 'True', reason: 'DeletingNode', message: 'deleting node' }],
      }),
    ),
  );
});

test('owner records: the newest report wins, Running starts the ready clock once, Deleted removes the record', () => {
  let records = [newRecord('web-abc12', 'h1', 'v1.36.3', '2026-11-22T10:00:00.000Z')];
  records = recordMachineReport(
    records,
    { name: 'web-abc12', phase: MachinePhase.Running, address: '127.1.0.9', marked: false, sequence: 2 },
    't1',
  );
  records = recordMachineReport(
    records,
    { name: 'web-abc12', phase: MachinePhase.Provisioning, marked: false, sequence: 1 },
    't2',
  );
  assert.deepEqual(
    [records[0]!.phase, records[0]!.runningSince, records[0]!.address],
    [MachinePhase.Running, 't1', '127.1.0.9'],
    'an older report arriving late changes nothing',
  );
  records = recordMachineReport(
    records,
    { name: 'web-abc12', phase: MachinePhase.Running, marked: true, sequence: 3 },
    't3',
  );
  assert.deepEqual([records[0]!.runningSince, records[0]!.marked], ['t1', true]);
  records = recordMachineReport(
    records,
    { name: 'web-abc12', phase: MachinePhase.Deleting, marked: true, blocker: 'draining', sequence: 4 },
    't4',
  );
  assert.deepEqual(
    [records[0]!.deleting, records[0]!.runningSince, records[0]!.blocker],
    [true, undefined, 'draining'],
  );
  assert.deepEqual(
    recordMachineReport(records, { name: 'web-abc12', phase: MachinePhase.Deleted, marked: true, sequence: 5 }, 't5'),
    [],
  );
});

test('a batch of reports leaves the records as the same reports one at a time, in any order', () => {
  const names = ['a', 'b', 'c', 'd'];
  const start = names.map((n) => newRecord(n, 'h1', 'v1.36.3', '2026-11-22T10:00:00.000Z'));
  const reports = [
    { name: 'a', phase: MachinePhase.Running, address: '127.1.0.2', marked: false, sequence: 1 },
    { name: 'b', phase: MachinePhase.Running, address: '127.1.0.3', marked: false, sequence: 2 },
    { name: 'b', phase: MachinePhase.Provisioning, marked: false, sequence: 1 },
    { name: 'c', phase: MachinePhase.Deleting, marked: true, blocker: 'draining', sequence: 3 },
    { name: 'd', phase: MachinePhase.Running, marked: false, sequence: 1 },
    { name: 'd', phase: MachinePhase.Deleted, marked: false, sequence: 2 },
    { name: 'gone', phase: MachinePhase.Running, marked: false, sequence: 9 },
  ];
  const oneByOne = reports.reduce((records, r) => recordMachineReport(records, r, 't'), start);
  assert.deepEqual(recordMachineReports(start, reports, 't'), oneByOne);
  assert.deepEqual(recordMachineReports(start, [...reports].reverse(), 't'), oneByOne);
  assert.deepEqual(
    oneByOne.map((m) => [m.name, m.phase, m.sequence, m.deleting]),
    [
      ['a', MachinePhase.Running, 1, false],
      ['b', MachinePhase.Running, 2, false],
      ['c', MachinePhase.Deleting, 3, true],
    ],
  );
});

test('1000 compact records stay far below Temporal payload limits', () => {
  const records = Array.from({ length: 1000 }, (_, i) => ({
    ...newRecord(
      `quickstart-md-0-5d8f9c7b1a-${String(i).padStart(5, 'x')}`,
      '5d8f9c7b1a',
      'v1.36.3',
      '2026-11-22T10:00:00.000Z',
    ),
    phase: MachinePhase.Running,
    address: `127.1.${i >> 8}.${i & 255}`,
    runningSince: '2026-11-22T10:01:00.000Z',
    sequence: 3,
  }));
  const bytes = Buffer.byteLength(JSON.stringify(records));
  assert.ok(bytes < 300 * 1024, `${bytes} bytes for 1000 records`);
});

test('an in-place template change replaces the old template keys and keeps the machine own keys', () => {
  const spec = {
    labels: { tier: 'old', 'operator/own': 'x' },
    annotations: { 'a/old': '1', 'cluster.x-k8s.io/delete-machine': '' },
  };
  const change = mergeTemplateChange(spec as never, {
    previous: { labels: { tier: 'old' }, annotations: { 'a/old': '1' } },
    next: { labels: { tier: 'new' }, annotations: {}, nodeDrainTimeoutSeconds: 30 },
  });
  assert.deepEqual(change.labels, { 'operator/own': 'x', tier: 'new' });
  assert.deepEqual(change.annotations, { 'cluster.x-k8s.io/delete-machine': '' });
  assert.equal(change.nodeDrainTimeoutSeconds, 30);
});

test("a control plane's template metadata changes in place: capt's own labels and cleanup hook stay, even where the old template named their keys", () => {
  const spec = (labels?: Record<string, string>, annotations?: Record<string, string>) =>
    ({ name: 'prod-control-plane', labels, annotations }) as ControlPlaneModel;
  const fields = (s: ControlPlaneModel) => controlPlaneMachineFields('prod', s);
  const own = controlPlaneMachineLabels('prod', 'prod-control-plane');
  const old = spec({ tier: 'a', 'cluster.x-k8s.io/cluster-name': 'other' }, { 'a/x': '1' });
  // A spec from before the metadata was carried, and one without it, tell the machines nothing.
  assert.equal(pendingTemplateChange(fields(spec()), fields(spec({}, {})), undefined), undefined);
  const first = pendingTemplateChange(fields(old), fields(spec({ tier: 'b' }, { 'a/y': '2' })), undefined)!;
  const folded = pendingTemplateChange(
    fields(spec({ tier: 'b' }, { 'a/y': '2' })),
    fields(spec({ tier: 'c' })),
    first,
  )!;
  assert.deepEqual(folded.previous, first.previous, "the machines still carry the first change's previous keys");
  const machine = {
    labels: { ...old.labels, ...own, 'operator/own': 'x' },
    annotations: { 'a/x': '1', [controlPlaneCleanupHook]: '' },
  };
  const merged = mergeTemplateChange(machine as never, folded);
  assert.deepEqual(merged.labels, { 'operator/own': 'x', tier: 'c', ...own });
  assert.deepEqual(merged.annotations, { [controlPlaneCleanupHook]: '' });
});

test('an owner summary changes with what the cluster plans with, not with each machine that becomes ready', () => {
  const owner = {
    kind: 'MachineDeployment',
    namespace: 'default',
    name: 'md',
    version: 'v1.36.3',
    revision: 1,
    templateHash: 'h',
    replicas: 1000,
    initialized: true,
    ready: false,
    available: false,
    failedMachines: 0,
    deleted: false,
    sequence: 1,
    readyReplicas: 10,
    step: 'creating',
  } as OwnerStatus;
  assert.equal(summaryKey(owner), summaryKey({ ...owner, readyReplicas: 500, step: 'waiting', sequence: 7 }));
  assert.notEqual(summaryKey(owner), summaryKey({ ...owner, ready: true }));
  assert.notEqual(summaryKey(owner), summaryKey({ ...owner, failedMachines: 1 }));
});

test('steps name a few machines and count the rest', () => {
  assert.equal(someNames(['a', 'b']), 'a, b');
  assert.equal(someNames(['a', 'b', 'c', 'd', 'e']), 'a, b, c and 2 more');
});

test('a deletion is held on hooks, a blocked drain and volumes; not while it passes the other gates', () => {
  const at = (gate: string, blocked: string[] = []) =>
    deletionHeld({ deletion: { gate, drain: { evicted: 0, remaining: 1, blocked, warnings: [] } } } as never);
  assert.deepEqual(
    [
      at('WaitingForPreDrainHook'),
      at('Draining'),
      at('Draining', ['pod a/b blocked by budget c']),
      at('WaitingForVolumeDetach'),
      at('DeletingInfrastructure'),
      at('DeletingNode'),
    ],
    [true, false, true, true, false, false],
  );
  assert.equal(deletionHeld({} as never), false);
});

test('a machine its owner just started tells it nothing new: the owner assumes Provisioning; the start names the real workflow type', () => {
  assert.equal(startedByOwnerKey('web-abc12'), reportKey(status(MachinePhase.Pending)));
  assert.equal(startedByOwnerKey('web-abc12'), reportKey(status(MachinePhase.Provisioned)));
  assert.notEqual(startedByOwnerKey('web-abc12'), reportKey(status(MachinePhase.Running)));
  assert.notEqual(
    startedByOwnerKey('web-abc12'),
    reportKey(status(MachinePhase.Pending, { annotations: { 'cluster.x-k8s.io/delete-machine': '' } })),
    'a delete mark at birth is news',
  );
  assert.equal(machineWorkflow.name, machineWorkflowType);
});

test('availability: running for minReadySeconds at the time asked, the canonical time compared as text and any other parsed, alike', () => {
  const record = (runningSince?: string, extra: Partial<MachineRecord> = {}): MachineRecord => ({
    ...newRecord('m-1', 'h1', 'v1.36.3', '2026-11-27T10:00:00.000Z'),
    phase: MachinePhase.Running,
    ...(runningSince ? { runningSince } : {}),
    ...extra,
  });
  const now = Date.parse('2026-11-27T10:00:30.000Z');
  const at = availability(30, now);
  assert.equal(at(record('2026-11-27T10:00:00.000Z')), true, 'exactly minReadySeconds ago');
  assert.equal(at(record('2026-11-27T10:00:00.001Z')), false, 'a millisecond short');
  // Another spelling of the same instants (an offset, no milliseconds) is parsed, with the same answers.
  assert.equal(at(record('2026-11-27T11:00:00+01:00')), true);
  assert.equal(at(record('2026-11-27T11:00:01+01:00')), false);
  assert.equal(at(record(undefined)), false, 'running, no time yet');
  assert.equal(at(record('2026-11-27T09:00:00.000Z', { deleting: true })), false, 'leaving');
  assert.equal(availability(0, now)(record('2026-11-27T10:00:30.000Z')), true, 'minReadySeconds 0: running now');
});
