import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { HealthCheckSpec } from '../../src/contract/health-check';
import { MachinePhase } from '../../src/contract/machine';
import type { MachineRecord } from '../../src/contract/owner';
import { evaluateHealth } from '../../workflows/shared/machine-health';
import { controlPlaneRemediation, remediationStrategy } from '../../workflows/control-plane/control-plane-remediation';

const t0 = Date.parse('2026-11-22T12:00:00Z');
const at = (s: number) => new Date(t0 + s * 1000).toISOString();
const check: HealthCheckSpec = {
  name: 'cp',
  unhealthyNodeConditions: [{ type: 'Ready', status: 'Unknown', timeoutSeconds: 30 }],
  nodeStartupTimeoutSeconds: 600,
};
const machine = (name: string, extra: Partial<MachineRecord> = {}): MachineRecord => ({
  name,
  templateHash: 'h',
  version: 'v1.35.4',
  createdAt: at(-7200),
  phase: MachinePhase.Running,
  deleting: false,
  marked: false,
  sequence: 1,
  ...extra,
});
const down = { node: { conditions: [{ type: 'Ready', status: 'Unknown' as const, since: at(-60) }] } };
const decide = (machines: MachineRecord[], spec = {}, last?: Parameters<typeof controlPlaneRemediation>[3]) =>
  controlPlaneRemediation(
    evaluateHealth(check, machines, t0),
    machines,
    remediationStrategy({ remediation: spec }),
    last,
    t0,
  );

test('one unhealthy of three is remediated; never the only machine, never below a healthy etcd quorum', () => {
  assert.deepEqual(decide([machine('a', down), machine('b'), machine('c')]), {
    remediate: evaluateHealth(check, [machine('a', down)], t0).remediable[0],
    retries: 0,
  });
  assert.match((decide([machine('a', down)]) as { blocked: string }).blocked, /only control-plane machine/);
  assert.match(
    (decide([machine('a', down), machine('b', down), machine('c')]) as { blocked: string }).blocked,
    /1 healthy of 2 etcd members, below quorum/,
  );
});

test('one at a time: nothing while a machine leaves or starts', () => {
  assert.equal(decide([machine('a', down), machine('b'), machine('c'), machine('d', { deleting: true })]), undefined);
  assert.equal(
    decide([machine('a', down), machine('b'), machine('c', { phase: MachinePhase.Provisioning, createdAt: at(-10) })]),
    undefined,
  );
});

test('remediationStrategy: a replacement unhealthy within minHealthyPeriod is a retry, held by retryPeriod and stopped by maxRetry', () => {
  const replacement = machine('a2', { ...down, createdAt: at(-120) });
  const last = { machine: 'a1', at: at(-100), retries: 0, replacement: 'a2' };
  assert.deepEqual(decide([replacement, machine('b'), machine('c')], { retryPeriodSeconds: 300 }, last), {
    waitUntilMs: t0 + 200_000,
    why: `a2 is unhealthy (Ready=Unknown for 60s (timeout 30s)) and replaces a1, remediated at ${at(-100)}: remediating it would be retry 1, held back by retryPeriod 300s until ${at(200)}`,
  });
  assert.equal((decide([replacement, machine('b'), machine('c')], {}, last) as { retries: number }).retries, 1);
  assert.match(
    (decide([replacement, machine('b'), machine('c')], { maxRetry: 0 }, last) as { blocked: string }).blocked,
    /^a2 is unhealthy .* and replaces a1, remediated at \S+: remediating it would be retry 1, beyond maxRetry 0; it stays for an operator to repair or delete$/,
  );
  assert.equal(
    (
      decide([replacement, machine('b'), machine('c')], { maxRetry: 0, minHealthyPeriodSeconds: 60 }, last) as {
        retries: number;
      }
    ).retries,
    0,
    'healthy past minHealthyPeriod: a new row',
  );
});
