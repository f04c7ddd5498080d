import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { HealthCheckSpec } from '../../src/contract/health-check';
import { MachinePhase } from '../../src/contract/machine';
import type { MachineRecord } from '../../src/contract/owner';
import { evaluateHealth, healthCheckConditions } from '../../workflows/shared/machine-health';

const t0 = Date.parse('2026-11-22T12:00:00Z');
const at = (s: number) => new Date(t0 + s * 1000).toISOString();
const check: HealthCheckSpec = {
  name: 'mhc',
  unhealthyNodeConditions: [
    { type: 'Ready', status: 'Unknown', timeoutSeconds: 40 },
    { type: 'Ready', status: 'False', timeoutSeconds: 40 },
  ],
  nodeStartupTimeoutSeconds: 600,
};
const running = (name: string, extra: Partial<MachineRecord> = {}): MachineRecord => ({
  name,
  templateHash: 'h',
  version: 'v1.35.4',
  createdAt: at(-1000),
  phase: MachinePhase.Running,
  deleting: false,
  marked: false,
  sequence: 1,
  ...extra,
});
const notReady = (since: number, status: 'Unknown' | 'False' = 'Unknown') => ({
  conditions: [{ type: 'Ready', status, since: at(since) }],
});

test('a Node condition counts once it has held for its timeout; until then the machine is neither healthy nor unhealthy', () => {
  const early = evaluateHealth(check, [running('a', { node: notReady(-30) }), running('b')], t0);
  assert.deepEqual([early.healthy, early.unhealthy.length, early.nextAtMs], [1, 0, t0 + 10_000]);
  const late = evaluateHealth(check, [running('a', { node: notReady(-50) }), running('b')], t0);
  assert.deepEqual(
    late.unhealthy.map((u) => [u.machine, u.reason, u.message, u.since]),
    [['a', 'UnhealthyNode', 'Ready=Unknown for 50s (timeout 40s)', at(-50)]],
  );
  assert.deepEqual([late.allowed, late.remediable.map((u) => u.machine)], [true, ['a']]);
});

test('maxUnhealthy 40% of three: one unhealthy is remediated, two are not, and the message gives the counts', () => {
  const mhc = { ...check, maxUnhealthy: '40%' };
  const one = evaluateHealth(mhc, [running('a', { node: notReady(-60) }), running('b'), running('c')], t0);
  assert.equal(one.allowed, true);
  const two = evaluateHealth(
    mhc,
    [running('a', { node: notReady(-60) }), running('b', { node: notReady(-60, 'False') }), running('c')],
    t0,
  );
  assert.equal(two.allowed, false);
  assert.match(two.message, /2 of 3 machines are not healthy, beyond maxUnhealthy 40%/);
  assert.equal(
    evaluateHealth(
      { ...check, maxUnhealthy: 1 },
      [running('a', { node: notReady(-60) }), running('b', { node: notReady(-60) }), running('c')],
      t0,
    ).allowed,
    false,
  );
});

test('unhealthyRange allows remediation only within its bounds', () => {
  const records = [running('a', { node: notReady(-60) }), running('b'), running('c')];
  assert.equal(evaluateHealth({ ...check, unhealthyRange: { min: 1, max: 2 } }, records, t0).allowed, true);
  assert.equal(evaluateHealth({ ...check, unhealthyRange: { min: 2, max: 3 } }, records, t0).allowed, false);
});

test('no Node within nodeStartupTimeout, a deleted Node, the remediate annotation and a failed machine are unhealthy; skip-remediation is never remediated', () => {
  const provisioning = (name: string, created: number): MachineRecord => ({
    ...running(name),
    phase: MachinePhase.Provisioning,
    createdAt: at(created),
  });
  const v = evaluateHealth(
    check,
    [
      provisioning('slow', -601),
      provisioning('young', -10),
      running('gone', { node: { conditions: [], gone: true } }),
      running('marked', { remediate: true }),
      running('failed', { phase: MachinePhase.Failed, blocker: 'bootstrap failed' }),
      running('skip', { node: notReady(-60), skipRemediation: true }),
      running('leaving', { node: notReady(-60), deleting: true }),
    ],
    t0,
  );
  assert.deepEqual(Object.fromEntries(v.unhealthy.map((u) => [u.machine, u.reason])), {
    slow: 'NodeStartupTimeout',
    gone: 'NodeNotFound',
    marked: 'HasRemediateAnnotation',
    failed: 'MachineHasFailure',
    skip: 'UnhealthyNode',
  });
  assert.deepEqual(v.remediable.map((u) => u.machine).sort(), ['failed', 'gone', 'marked', 'slow']);
  assert.deepEqual([v.expected, v.healthy, v.nextAtMs], [6, 0, Date.parse(at(590))]);
  assert.equal(
    evaluateHealth({ ...check, nodeStartupTimeoutSeconds: 0 }, [provisioning('slow', -6000)], t0).unhealthy.length,
    0,
    'timeout 0 turns the startup check off',
  );
});

test("a check of the machine's own NodeReady (Cluster API's quick-start: Unknown or False for a while) judges it from its Node's Ready, and a machine without a Node as Unknown since its creation", () => {
  const own: HealthCheckSpec = {
    name: 'mhc',
    unhealthyNodeConditions: [],
    unhealthyMachineConditions: [
      { type: 'NodeReady', status: 'Unknown', timeoutSeconds: 300 },
      { type: 'NodeReady', status: 'False', timeoutSeconds: 300 },
    ],
    nodeStartupTimeoutSeconds: 0,
  };
  const provisioning = (name: string, created: number) =>
    running(name, { phase: MachinePhase.Provisioning, createdAt: at(created) });
  const v = evaluateHealth(
    own,
    [
      running('lost', { node: notReady(-301) }),
      running('down', { node: notReady(-400, 'False') }),
      running('blip', { node: notReady(-100) }),
      running('fine'),
      provisioning('stuck', -301),
      provisioning('booting', -30),
    ],
    t0,
  );
  assert.deepEqual(
    v.unhealthy.map((u) => [u.machine, u.reason, u.message, u.since]),
    [
      ['down', 'UnhealthyMachine', 'NodeReady=False for 400s (timeout 300s)', at(-400)],
      ['lost', 'UnhealthyMachine', 'NodeReady=Unknown for 301s (timeout 300s)', at(-301)],
      ['stuck', 'UnhealthyMachine', 'NodeReady=Unknown for 301s (timeout 300s)', at(-301)],
    ],
  );
  // blip and booting are within their timeout: neither healthy nor unhealthy, looked at again when the first runs out.
  assert.deepEqual([v.expected, v.healthy, v.nextAtMs], [6, 1, Date.parse(at(200))]);

  // The machine's condition names the reason when its Node's holds too; a deleted Node is unhealthy at once.
  const both = { ...own, unhealthyNodeConditions: check.unhealthyNodeConditions };
  const judged = evaluateHealth(
    both,
    [running('lost', { node: notReady(-301) }), running('gone', { node: { conditions: [], gone: true } })],
    t0,
  );
  assert.deepEqual(
    judged.unhealthy.map((u) => [u.machine, u.reason]),
    [
      ['lost', 'UnhealthyMachine'],
      ['gone', 'NodeNotFound'],
    ],
  );
});

test('HealthCheckSucceeded on each judged machine: True when healthy, False with the reason when unhealthy, none within a timeout or while deleting; a check that may not remediate (unhealthyLessThanOrEqualTo 0) still reports', () => {
  const reportOnly = { ...check, maxUnhealthy: 0 };
  const records = [
    running('healthy'),
    running('broken', { node: notReady(-50) }),
    running('recent', { node: notReady(-30) }),
    running('leaving', { deleting: true, node: notReady(-50) }),
  ];
  assert.equal(evaluateHealth(reportOnly, records, t0).allowed, false, 'nothing is remediated');
  assert.deepEqual(Object.fromEntries(healthCheckConditions(reportOnly, records, t0)), {
    healthy: { type: 'HealthCheckSucceeded', status: 'True', reason: 'HealthCheckSucceeded' },
    broken: {
      type: 'HealthCheckSucceeded',
      status: 'False',
      reason: 'UnhealthyNode',
      message: 'mhc: Ready=Unknown for 50s (timeout 40s)',
    },
  });
});
