import assert from 'node:assert/strict';
import { test } from 'node:test';
import { healthCheckObjectStatus } from '../../src/bridge/health-check-status-out';
import type { ApiObject } from '../../src/bridge/management-client';
import type { HealthCheckStatus } from '../../src/contract/health-check';
import { MachinePhase } from '../../src/contract/machine';
import type { MachineRecord, OwnerStatus } from '../../src/contract/owner';

const record = (name: string, deleting = false) =>
  ({ name, phase: MachinePhase.Running, deleting, marked: false, sequence: 1 }) as MachineRecord;
const owner = { machines: [record('w1'), record('w2'), record('w3'), record('w0', true)] } as OwnerStatus;
const check = (limit?: number | string): ApiObject => ({
  apiVersion: 'cluster.x-k8s.io/v1beta2',
  kind: 'MachineHealthCheck',
  metadata: { name: 'hc', namespace: 'default', generation: 2 },
  spec: limit === undefined ? {} : { remediation: { triggerIf: { unhealthyLessThanOrEqualTo: limit } } },
});
const health = (allowed: boolean, currentHealthy: number): HealthCheckStatus => ({
  name: 'hc',
  nodeStartupTimeoutSeconds: 600,
  expectedMachines: 3,
  currentHealthy,
  remediationAllowed: allowed,
  message: allowed ? '1 unhealthy' : '2 unhealthy, more than unhealthyLessThanOrEqualTo 40% allows',
  unhealthy: [],
  remediations: [],
});
const now = '2026-11-26T05:00:00Z';

test('a MachineHealthCheck’s status: its targets, healthy count and how many more remediations its limit allows', () => {
  const status = healthCheckObjectStatus(check(2), owner, health(true, 2), undefined, {
    generation: 2,
    observed: true,
    now,
  });
  assert.deepEqual(
    { ...status, conditions: undefined },
    {
      expectedMachines: 3,
      currentHealthy: 2,
      remediationsAllowed: 1,
      targets: ['w1', 'w2', 'w3'],
      conditions: undefined,
      observedGeneration: 2,
    },
  );
  assert.deepEqual(
    (status.conditions as { type: string; status: string; message: string }[]).map((c) => [
      c.type,
      c.status,
      c.message,
    ]),
    [['RemediationAllowed', 'True', '1 unhealthy']],
  );
  // Without a limit every machine may be remediated (100%); a percentage rounds down, as Cluster API's.
  assert.equal(
    healthCheckObjectStatus(check(), owner, health(true, 3), undefined, { generation: 2, observed: true, now })
      .remediationsAllowed,
    3,
  );
  assert.equal(
    healthCheckObjectStatus(check('40%'), owner, health(true, 3), undefined, { generation: 2, observed: true, now })
      .remediationsAllowed,
    1,
  );
});

test('held back, it allows none and says why; unobserved, it keeps the generation it last observed', () => {
  const status = healthCheckObjectStatus(
    check('40%'),
    owner,
    health(false, 1),
    { observedGeneration: 1 },
    { generation: 2, observed: false, now },
  );
  assert.equal(status.remediationsAllowed, 0);
  assert.equal(status.observedGeneration, 1);
  const [condition] = status.conditions as { status: string; reason: string; message: string }[];
  assert.deepEqual([condition!.status, condition!.reason], ['False', 'TooManyUnhealthy']);
  assert.match(condition!.message, /more than unhealthyLessThanOrEqualTo 40% allows/);
});
