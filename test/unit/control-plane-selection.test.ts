import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  blockingProblems,
  controlPlaneDomain,
  scaleDownVictim,
} from '../../workflows/control-plane/control-plane-workflow';
import type { MachineRecord } from '../../src/contract/owner';
import { newRecord } from '../../workflows/shared/machine-pool';
import { expiringMachines } from '../../workflows/control-plane/certificate-rotation';

const machine = (name: string, createdAt: string, templateHash: string, marked = false): MachineRecord => ({
  ...newRecord(name, templateHash, 'v1.36.3', createdAt),
  marked,
});

const old = (m: MachineRecord) => m.templateHash !== 'new';

test('control-plane scale-down order: outdated+annotated, annotated, outdated+unhealthy, outdated, oldest', () => {
  const a = machine('a', '1', 'old');
  const b = machine('b', '2', 'old');
  const c = machine('c', '3', 'new');
  const marked = machine('d', '4', 'new', true);
  assert.equal(scaleDownVictim([a, b, c, marked], old).name, 'd', 'the annotation wins over age');
  assert.equal(
    scaleDownVictim([a, b, c], old, ['b']).name,
    'b',
    'an outdated machine with unhealthy components before an older healthy one',
  );
  assert.equal(scaleDownVictim([a, b, c], old, ['c']).name, 'a', 'unhealthy but current: outdated ones still go first');
  assert.equal(scaleDownVictim([a, b, c], old).name, 'a', 'the oldest outdated');
  assert.equal(
    scaleDownVictim([machine('x', '2', 'new'), machine('y', '1', 'new')], old).name,
    'y',
    'all current: the oldest',
  );
});

test('failure domains: a new control-plane machine goes where the fewest are; one leaves from where the most are', () => {
  const inDomain = (name: string, createdAt: string, hash: string, failureDomain: string, deleting = false) => ({
    ...machine(name, createdAt, hash),
    failureDomain,
    deleting,
  });
  const domains = ['fd1', 'fd2', 'fd3'];
  assert.equal(controlPlaneDomain(domains, []), 'fd1', 'the first declared, on a tie');
  assert.equal(controlPlaneDomain(domains, [inDomain('a', '1', 'old', 'fd1')]), 'fd2');
  assert.equal(
    controlPlaneDomain(domains, [inDomain('a', '1', 'old', 'fd1'), inDomain('b', '2', 'old', 'fd2', true)]),
    'fd2',
    'a machine leaving holds no place',
  );
  assert.equal(controlPlaneDomain(undefined, [inDomain('a', '1', 'old', 'fd1')]), undefined, 'no domains declared');
  assert.equal(controlPlaneDomain([], []), undefined);

  // A rollout of 3 that surged a fourth into fd1: the outdated one in fd1 leaves, though b and c are older.
  const surged = [
    inDomain('b', '1', 'old', 'fd2'),
    inDomain('c', '2', 'old', 'fd3'),
    inDomain('a', '3', 'old', 'fd1'),
    inDomain('n', '4', 'new', 'fd1'),
  ];
  assert.equal(scaleDownVictim(surged, old).name, 'a');
  assert.equal(
    scaleDownVictim(
      surged.filter((m) => m.name !== 'a'),
      old,
    ).name,
    'b',
    'domains even: the oldest outdated',
  );
});

test('a preflight problem of the machine about to leave does not hold the scale-down back; others do', () => {
  const problems = [
    { machine: 'b', message: 'kube-scheduler on b is not healthy' },
    { message: 'no etcd member answered' },
  ];
  assert.deepEqual(blockingProblems(problems, 'b'), [{ message: 'no etcd member answered' }]);
  assert.deepEqual(blockingProblems(problems.slice(0, 1), 'b'), []);
  assert.equal(blockingProblems(problems.slice(0, 1)).length, 1, 'a scale-up is held by every problem');
});

test('certificatesExpiryDays: machines whose certificate expires within that many days are outdated', () => {
  const now = Date.parse('2026-11-22T00:00:00Z');
  const expiry = { a: '2026-12-01T00:00:00Z', b: '2027-11-22T00:00:00Z' };
  assert.deepEqual(expiringMachines(expiry, 30, now), ['a']);
  assert.deepEqual(expiringMachines(expiry, 366, now), ['a', 'b']);
  assert.deepEqual(expiringMachines(expiry, undefined, now), [], 'not set: never');
});
