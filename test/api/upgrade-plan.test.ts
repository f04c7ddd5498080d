import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { upgradePlan } from '../../src/contract/upgrade-plan';
import { topologyRenderPath } from '../../src/tools';

// capt's upgrade plan against Cluster API's own plan functions (GetUpgradePlanFromClusterClassVersions or
// GetUpgradePlanOneMinor, then DefaultAndValidateUpgradePlans), which topology-render runs at the pinned release.
const capi = (classVersions: string[], desired: string, controlPlane: string, minWorkers: string | undefined) => {
  const input = JSON.stringify({ upgradePlan: { classVersions, desired, controlPlane, minWorkers: minWorkers ?? '' } });
  const run = spawnSync(topologyRenderPath(), [], { input, encoding: 'utf8', timeout: 10_000 });
  assert.ok(run.status === 0 || run.status === 1, `topology-render exit ${run.status}: ${run.stderr}`);
  const out = JSON.parse(run.stdout) as
    { controlPlane: string[]; workers: string[] } | { errors: { message: string }[] };
  return 'errors' in out ? { refused: out.errors[0]!.message } : out;
};

const listed = [
  'v1.31.2',
  'v1.32.0',
  'v1.32.5',
  'v1.33.1',
  'v1.34.0',
  'v1.34.4',
  'v1.35.4',
  'v1.36.1',
  'v1.36.3',
  'v1.37.2',
  'v1.38.0',
];
const minor = (v: string) => Number(v.split('.')[1]);

test("capt's upgrade plans are Cluster API's, for chained upgrades, patch upgrades, lagging workers and no workers", () => {
  let compared = 0;
  for (const [c, cp] of ['v1.31.2', 'v1.32.0', 'v1.34.0', 'v1.34.4'].entries())
    for (const target of listed.filter((v) => v > cp))
      for (const workers of [cp, listed[Math.max(0, c - 1)]!, undefined]) {
        if (workers && minor(cp) - minor(workers) > 3) continue;
        assert.deepEqual(
          upgradePlan(listed, target, cp, workers),
          capi(listed, target, cp, workers),
          `from control plane ${cp}, workers ${workers ?? 'none'}, to ${target}`,
        );
        compared++;
      }
  assert.ok(compared > 50, `${compared} cases compared`);
});

test('without kubernetesVersions in the class, one minor at most, and the refusal says so as Cluster API does', () => {
  for (const [cp, target] of [
    ['v1.35.4', 'v1.36.3'],
    ['v1.36.1', 'v1.36.3'],
    ['v1.34.4', 'v1.36.3'],
  ] as const)
    assert.deepEqual(upgradePlan(undefined, target, cp, cp), capi([], target, cp, cp), `${cp} -> ${target}`);
  assert.deepEqual(upgradePlan(undefined, 'v1.36.3', 'v1.34.4', 'v1.34.4'), {
    refused: 'cannot compute an upgrade plan from v1.34.4 to v1.36.3',
  });
});
