import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  annotationChange,
  annotationsDigest,
  annotationsEdited,
  marksInFlight,
  mirroredAnnotationsAnnotation,
} from '../../src/bridge/machine-annotations-door';
import type { ApiObject } from '../../src/bridge/management-client';
import type { ClusterView } from '../../src/contract/cluster';
import { MachinePhase } from '../../src/contract/machine';
import type { MachineRecord, OwnerStatus } from '../../src/contract/owner';

/** A Machine object as the bridge wrote it for `written`, then changed by someone to `now`. */
function machine(name: string, written: Record<string, string>, now = written): ApiObject {
  return {
    apiVersion: 'cluster.x-k8s.io/v1beta2',
    kind: 'Machine',
    metadata: {
      name,
      namespace: 'default',
      annotations: {
        ...now,
        'capt.cluster.x-k8s.io/report-sequence': '4',
        'kubectl.kubernetes.io/last-applied-configuration': '{}',
        [mirroredAnnotationsAnnotation]: annotationsDigest(written),
      },
    },
  };
}

test('an object is edited only when its own annotations differ from what the bridge last wrote', () => {
  const hook = { 'pre-terminate.delete.hook.machine.cluster.x-k8s.io/kcp-cleanup': '' };
  assert.equal(annotationsEdited(machine('a', hook)), false, 'bookkeeping keys are not the machine’s');
  assert.equal(annotationsEdited(machine('a', hook, { ...hook, 'cluster.x-k8s.io/delete-machine': 'yes' })), true);
  assert.equal(annotationsEdited(machine('a', hook, {})), true, 'a removal is an edit');
  const older = machine('a', hook);
  delete older.metadata.annotations![mirroredAnnotationsAnnotation];
  assert.equal(annotationsEdited(older), false, 'an object written before the digest is not taken as edited');
});

test('the change sets what the object has anew and removes what it dropped', () => {
  assert.deepEqual(annotationChange({ a: '1', b: '2', c: '3' }, { a: '1', b: 'two', d: '4' }), {
    set: { b: 'two', d: '4' },
    remove: ['c'],
  });
  assert.deepEqual(annotationChange({ a: '1' }, { a: '1' }), { set: {}, remove: [] });
});

test('a delete-machine mark is in flight until its owner’s record shows it', () => {
  const record = (name: string, marked: boolean, deleting = false): MachineRecord => ({
    name,
    templateHash: 'h',
    version: 'v1.36.3',
    createdAt: '2026-11-26T00:00:00Z',
    phase: MachinePhase.Running,
    deleting,
    marked,
    sequence: 1,
  });
  const owner = (machines: MachineRecord[]) => ({ kind: 'MachineDeployment', name: 'md', machines }) as OwnerStatus;
  const mark = { 'cluster.x-k8s.io/delete-machine': 'yes' };
  const objects = [machine('w1', {}, mark), machine('w2', {}), machine('w3', {}, mark), machine('w4', {}, mark)];
  const view = {
    machineDeployments: [
      owner([record('w1', false), record('w2', false), record('w3', true), record('w4', false, true)]),
    ],
  } as unknown as ClusterView;
  // w1 is marked on its object only; w3's owner knows; w4 is already leaving.
  assert.deepEqual(marksInFlight(objects, view), ['w1']);
});
