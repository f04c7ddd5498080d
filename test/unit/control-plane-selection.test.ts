import assert from 'node:assert/strict';
import { test } from 'node:test';
import { blockingProblems, scaleDownVictim } from '../../workflows/control-plane/control-plane-workflow';
import type { PoolMachine } from '../../workflows/shared/machine-pool';

const machine = (name: string, createdAt: string, templateHash: string, annotations: Record<string, string> = {}): PoolMachine => ({
  name, createdAt, templateHash, deleting: false,
  status: { annotations } as PoolMachine['status'],
});

test('control-plane scale-down order: outdated+annotated, annotated, outdated+unhealthy, outdated, oldest', () => {
  const a = machine('a', '1', 'old');
  const b = machine('b', '2', 'old');
  const c = machine('c', '3', 'new');
  const marked = machine('d', '4', 'new', { 'cluster.x-k8s.io/delete-machine': '' });
  assert.equal(scaleDownVictim([a, b, c, marked], 'new').name, 'd', 'the annotation wins over age');
  assert.equal(scaleDownVictim([a, b, c], 'new', ['b']).name, 'b', 'an outdated machine with unhealthy components before an older healthy one');
  assert.equal(scaleDownVictim([a, b, c], 'new', ['c']).name, 'a', 'unhealthy but current: outdated ones still go first');
  assert.equal(scaleDownVictim([a, b, c], 'new').name, 'a', 'the oldest outdated');
  assert.equal(scaleDownVictim([machine('x', '2', 'new'), machine('y', '1', 'new')], 'new').name, 'y', 'all current: the oldest');
});

test('a preflight problem of the machine about to leave does not hold the scale-down back; others do', () => {
  const problems = [{ machine: 'b', message: 'kube-scheduler on b is not healthy' }, { message: 'no etcd member answered' }];
  assert.deepEqual(blockingProblems(problems, 'b'), [{ message: 'no etcd member answered' }]);
  assert.deepEqual(blockingProblems(problems.slice(0, 1), 'b'), []);
  assert.equal(blockingProblems(problems.slice(0, 1)).length, 1, 'a scale-up is held by every problem');
});
