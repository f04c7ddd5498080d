import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  assertGone,
  chaosGapMs,
  deleteCluster,
  ensureWorkers,
  fewestKills,
  kept,
  killAtRandom,
  kills,
  modelOf,
  newer,
  older,
  retrying,
  settled,
  suite,
  type Desired,
} from '../fixtures/worker-chaos';

// Ten operations on two clusters while a core worker, the provider's worker or the Temporal server is SIGKILLed
// every 3-12 s. Not in npm test (CI's 20 minutes): `node tools/run-tests.js heavy/chaos`, runs recorded in
// docs/development.md.
test('chaos: ten operations (create, scale, rollout, upgrade, delete) while workers and the server are SIGKILLed at random; each ends with the machines asked for in the provider, as Nodes and as workflows, each once; nothing leaked', async () => {
  await ensureWorkers();
  const killer = killAtRandom(['core-a', 'core-b', 'provider', 'server'], chaosGapMs);
  const c1: Desired = { controlPlane: 1, workers: 2, version: older, workerVersion: older };
  const c2: Desired = { controlPlane: 1, workers: 1, version: newer, workerVersion: newer };
  // Each cluster's workers as the provider, the Nodes and Temporal last held them.
  let c1Workers: string[] = [];
  let c2Workers: string[] = [];
  const restart = async (cluster: string, want: Desired) => {
    const md = `${cluster}-md-0`;
    const { revision } = await retrying(() => suite.client.ownerStatus('machinedeployment', 'default', md), md);
    await retrying(() => suite.client.rolloutRestart('machinedeployment', 'default', md), `restart ${md}`);
    return settled(cluster, want, (s) => s.machineDeployments[0]!.revision > revision);
  };
  const operations: [string, () => Promise<unknown>][] = [
    [
      'create c1',
      async () => {
        await retrying(() => suite.client.apply([modelOf('c1', c1)]), 'apply c1');
        c1Workers = await settled('c1', c1);
      },
    ],
    [
      'create c2',
      async () => {
        await retrying(() => suite.client.apply([modelOf('c2', c2)]), 'apply c2');
        c2Workers = await settled('c2', c2);
      },
    ],
    [
      'scale c1 to 4',
      async () => {
        c1.workers = 4;
        await retrying(() => suite.client.scale('machinedeployment', 'default', 'c1-md-0', 4), 'scale c1');
        const before = c1Workers;
        c1Workers = await settled('c1', c1);
        assert.deepEqual(kept(before, c1Workers), [...before].sort(), 'scaling up c1 kept its workers');
      },
    ],
    [
      'rollout restart c1',
      async () => {
        const before = c1Workers;
        c1Workers = await restart('c1', c1);
        assert.deepEqual(kept(before, c1Workers), [], 'the restart replaced every worker of c1');
      },
    ],
    [
      'upgrade c1 control plane',
      async () => {
        c1.version = newer;
        await retrying(() => suite.client.apply([modelOf('c1', c1)]), 'upgrade c1');
        const before = c1Workers;
        c1Workers = await settled('c1', c1);
        assert.deepEqual(kept(before, c1Workers), [...before].sort(), "the control plane's upgrade left c1's workers");
      },
    ],
    [
      'scale c2 to 3',
      async () => {
        c2.workers = 3;
        await retrying(() => suite.client.scale('machinedeployment', 'default', 'c2-md-0', 3), 'scale c2');
        const before = c2Workers;
        c2Workers = await settled('c2', c2);
        assert.deepEqual(kept(before, c2Workers), [...before].sort(), 'scaling up c2 kept its workers');
      },
    ],
    [
      'rollout restart c2',
      async () => {
        const before = c2Workers;
        c2Workers = await restart('c2', c2);
        assert.deepEqual(kept(before, c2Workers), [], 'the restart replaced every worker of c2');
      },
    ],
    [
      'scale c1 to 1',
      async () => {
        c1.workers = 1;
        await retrying(() => suite.client.scale('machinedeployment', 'default', 'c1-md-0', 1), 'scale c1');
        const before = c1Workers;
        c1Workers = await settled('c1', c1);
        assert.deepEqual(kept(before, c1Workers), [...c1Workers].sort(), 'scaling down c1 kept one of its workers');
      },
    ],
    ['delete c2', () => deleteCluster('c2')],
    [
      'upgrade c1 workers',
      async () => {
        c1.workerVersion = newer;
        await retrying(() => suite.client.apply([modelOf('c1', c1)]), 'upgrade c1 workers');
        const before = c1Workers;
        c1Workers = await settled('c1', c1);
        assert.deepEqual(kept(before, c1Workers), [], "the upgrade replaced c1's workers");
      },
    ],
  ];
  let stopped: { count: number; waitingMs: number } | undefined;
  try {
    for (const [name, operation] of operations) {
      const t0 = Date.now();
      await operation();
      console.log(`${name}: ${((Date.now() - t0) / 1000).toFixed(1)} s (${kills.length} kills so far)`);
    }
  } finally {
    stopped = await killer.stop();
    console.log(
      `chaos: ${stopped.count} kills survived over ${operations.length} operations; the killer waited ${(stopped.waitingMs / 1000).toFixed(1)} s, so at least ${fewestKills(stopped.waitingMs, chaosGapMs[1])} were due`,
    );
  }
  const fewest = fewestKills(stopped.waitingMs, chaosGapMs[1]);
  assert.ok(
    stopped.count >= fewest,
    `${stopped.count} kills, yet the killer waited ${(stopped.waitingMs / 1000).toFixed(1)} s, never more than ` +
      `${chaosGapMs[1] / 1000} s before a kill: at least ${fewest} were due, so the kills stopped`,
  );
  // The deletion in the middle, now that the server stays up for the listing.
  await assertGone('c2');
  await deleteCluster('c1');
  await assertGone('c1');
});
