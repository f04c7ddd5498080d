import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MachinePhase, type MachineReport, type MachineStatus } from '../../src/contract/machine';
import type { OwnerSummary } from '../../src/contract/owner';
import { adoptedRecord, adoptedTemplateHash, labelledOwner } from '../../activities/machine/machine-adoption';
import {
  adoptRecords,
  adoptUnlisted,
  holdEarlyReport,
  rebuiltOwnerState,
  type AdoptionProgress,
} from '../../workflows/shared/owner-adoption';
import { rebuiltReplicas } from '../../workflows/cluster/owner-supervision';

const web = { kind: 'MachineDeployment' as const, name: 'web' };
const now = '2026-11-22T12:00:00.000Z';
const mdLabels = {
  'cluster.x-k8s.io/deployment-name': 'web',
  'cluster.x-k8s.io/cluster-name': 'prod',
  'cluster.x-k8s.io/set-name': 'web-1a2b3c4d',
};
const status = (name: string, phase: MachinePhase, extra: Partial<MachineStatus> = {}): MachineStatus => ({
  namespace: 'default',
  name,
  cluster: 'prod',
  phase,
  version: 'v1.36.3',
  addresses: ['127.1.0.9'],
  createdAt: '2026-11-22T10:00:00.000Z',
  conditions: [],
  step: 'running',
  stepReason: 'Running',
  labels: mdLabels,
  annotations: {},
  sequence: 4,
  ...extra,
});
const report = (name: string, phase: MachinePhase, sequence: number): MachineReport => ({
  name,
  phase,
  marked: false,
  sequence,
});

test('a machine belongs to the owner its labels name; standalone machines to none', () => {
  assert.deepEqual(labelledOwner(mdLabels), web);
  assert.deepEqual(
    labelledOwner({ 'cluster.x-k8s.io/control-plane': '', 'cluster.x-k8s.io/control-plane-name': 'cp' }),
    { kind: 'KubeadmControlPlane', name: 'cp' },
  );
  assert.equal(labelledOwner({ 'cluster.x-k8s.io/cluster-name': 'prod' }), undefined);
});

test('an adopted machine keeps its template hash: from its start memo, else its MachineSet name, else none (the rollout replaces it)', () => {
  assert.equal(adoptedTemplateHash(web, mdLabels, { batch: 'b', templateHash: 'feedbeef' }), 'feedbeef');
  assert.equal(adoptedTemplateHash(web, mdLabels, { batch: 'b' }), '1a2b3c4d');
  assert.equal(adoptedTemplateHash({ kind: 'KubeadmControlPlane', name: 'cp' }, {}, undefined), '');
  assert.equal(
    adoptedTemplateHash(web, { 'cluster.x-k8s.io/set-name': 'api-1a2b3c4d' }, undefined),
    '',
    "another deployment's set name is not taken",
  );
});

test("the adopted record says what the machine says of itself; other owners' and deleted machines are not adopted", () => {
  const running = adoptedRecord(
    web,
    status('web-1', MachinePhase.Running, { annotations: { 'cluster.x-k8s.io/delete-machine': '' } }),
    undefined,
    now,
  )!;
  assert.deepEqual(running, {
    name: 'web-1',
    templateHash: '1a2b3c4d',
    version: 'v1.36.3',
    createdAt: '2026-11-22T10:00:00.000Z',
    phase: MachinePhase.Running,
    address: '127.1.0.9',
    deleting: false,
    marked: true,
    runningSince: now,
    sequence: 4,
  });
  assert.equal(
    adoptedRecord(web, status('web-2', MachinePhase.Provisioned), undefined, now)!.phase,
    MachinePhase.Provisioning,
    'phases before Running read Provisioning, as reports say',
  );
  assert.equal(adoptedRecord(web, status('web-3', MachinePhase.Deleting), undefined, now)!.deleting, true);
  assert.equal(adoptedRecord(web, status('web-4', MachinePhase.Deleted), undefined, now), undefined);
  assert.equal(
    adoptedRecord({ kind: 'MachineDeployment', name: 'api' }, status('web-5', MachinePhase.Running), undefined, now),
    undefined,
  );
});

test('reports that arrive before their machine is adopted are kept and applied on adoption; none adopts a machine twice or one already deleted', () => {
  const progress: AdoptionProgress = { early: [] };
  const machines = [adoptedRecord(web, status('web-1', MachinePhase.Running), undefined, now)!];
  assert.equal(
    holdEarlyReport(progress, machines, report('web-1', MachinePhase.Deleting, 5)),
    false,
    "an adopted machine's report applies at once",
  );
  assert.equal(holdEarlyReport(progress, machines, report('web-2', MachinePhase.Running, 6)), true);
  assert.equal(
    holdEarlyReport(progress, machines, report('web-2', MachinePhase.Provisioning, 5)),
    true,
    'an older report is kept aside, not over the newer',
  );
  assert.equal(holdEarlyReport(progress, machines, report('web-3', MachinePhase.Deleted, 9)), true);
  assert.equal(
    holdEarlyReport(undefined, machines, report('web-9', MachinePhase.Running, 1)),
    false,
    'no adoption under way: nothing is held',
  );

  const page = [
    adoptedRecord(web, status('web-1', MachinePhase.Running), undefined, now)!,
    adoptedRecord(web, status('web-2', MachinePhase.Provisioning), undefined, now)!,
    adoptedRecord(web, status('web-3', MachinePhase.Deleting), undefined, now)!,
  ];
  assert.equal(adoptRecords(machines, progress, page, now), 1, 'web-1 was there already, web-3 reported Deleted');
  assert.deepEqual(
    machines.map((m) => `${m.name} ${m.phase}`),
    ['web-1 Running', 'web-2 Running'],
  );
  assert.deepEqual(progress.early, []);

  // A machine that reported but no listing showed is the owner's all the same; its template is unknown.
  holdEarlyReport(progress, machines, report('web-4', MachinePhase.Running, 2));
  assert.equal(adoptUnlisted(machines, progress, 'v1.36.3', now), 1);
  assert.deepEqual(
    machines.find((m) => m.name === 'web-4'),
    {
      name: 'web-4',
      templateHash: '',
      version: 'v1.36.3',
      createdAt: now,
      phase: MachinePhase.Running,
      marked: false,
      sequence: 2,
      deleting: false,
      runningSince: now,
    },
  );
});

test("a rebuilt owner numbers its reports on from the lost one's and starts deleting when the cluster is", () => {
  const previous = { sequence: 41, replicas: 3, observedGeneration: 2 } as OwnerSummary;
  const state = rebuiltOwnerState(
    { cause: 'workflow md/default/web TERMINATED', previous, deleting: { clusterDeleting: true } },
    now,
  );
  assert.deepEqual(state, {
    adoption: { cause: 'workflow md/default/web TERMINATED', at: now, adopted: 0, complete: false },
    adoptionProgress: { early: [] },
    reports: 41,
    deleting: { clusterDeleting: true },
  });
});

test('a rebuilt owner keeps the replicas it was scaled to, unless the cluster holds a newer applied change it never received', () => {
  const previous = { replicas: 5, observedGeneration: 3 } as OwnerSummary;
  assert.equal(rebuiltReplicas(2, 3, previous), 5, 'capt scale went to the owner: its count stands');
  assert.equal(rebuiltReplicas(2, 4, previous), 2, 'an apply of generation 4 never reached it: the spec stands');
  assert.equal(rebuiltReplicas(2, 1, undefined), 2, 'nothing heard of it: the spec');
});
