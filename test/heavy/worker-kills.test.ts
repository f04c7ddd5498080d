import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeClient } from '../../src/kube/kube-client';
import { assertMachines } from '../fixtures/cluster-agreement';
import {
  deleteCluster,
  assertGone,
  ensureWorkers,
  h,
  killAtRandom,
  matches,
  modelOf,
  newer,
  suite,
  waitMatches,
  type Desired,
} from '../fixtures/worker-chaos';

// Two core workers, each with a CAPT_HOME of its own as two hosts would have, and the provider's worker on the
// machines' host (test/fixtures/worker-chaos.ts); the chaos run of ten operations is test/heavy/chaos.test.ts.
test('a core worker SIGKILLed five times at random instants during a rollout: the other carries on and the rollout completes, each machine once', async () => {
  await ensureWorkers();
  const want: Desired = { controlPlane: 1, workers: 4, version: newer, workerVersion: newer };
  // Workers boot for 8 s, so the rollout (one new machine at a time) outlasts five kill cycles however fast
  // the machine running the test is: each cycle is a gap of 2 s at most, up to 3 s down and a restart.
  await suite.client.apply([modelOf('wk', want, 8)]);
  const ready = await waitMatches('wk', want);
  const kube = new KubeClient(await suite.client.kubeconfig('default', 'wk'));
  const before = await assertMachines(h.env.client, kube, 'default', 'wk', 5, 'after create');
  const { revision } = ready.machineDeployments[0]!;

  const rollout = Date.now();
  await suite.client.rolloutRestart('machinedeployment', 'default', 'wk-md-0');
  const killer = killAtRandom(['core-a', 'core-b'], [300, 2000], 5);
  let longestPauseMs = 0;
  let lastChange = Date.now();
  let lastMachines = '';
  let completedAt = 0;
  for (const deadline = Date.now() + 420_000; !completedAt; await sleep(200)) {
    if (Date.now() > deadline) assert.fail('the rollout did not complete');
    const s = await suite.client.clusterStatus('default', 'wk').catch(() => undefined);
    if (!s) continue;
    const md = s.machineDeployments[0]!;
    const machines = JSON.stringify(md.machines.map((m) => [m.name, m.phase, m.deleting]));
    if (machines !== lastMachines) [lastMachines, lastChange] = [machines, Date.now()];
    longestPauseMs = Math.max(longestPauseMs, Date.now() - lastChange);
    if (md.revision > revision && matches(s, want) && md.machines.every((m) => !before.includes(m.name)))
      completedAt = Date.now();
  }
  const { count: killed } = await killer.stop();
  console.log(
    `rollout of 4 with ${killed} core-worker kills: ${((completedAt - rollout) / 1000).toFixed(1)} s; longest pause between two changes of its machines: ${(longestPauseMs / 1000).toFixed(1)} s`,
  );
  assert.equal(killed, 5, 'five kills landed before the rollout completed');
  const afterRollout = await assertMachines(h.env.client, kube, 'default', 'wk', 5, 'after the rollout');
  assert.equal(
    afterRollout.filter((name) => before.includes(name) && name.startsWith('wk-md-0')).length,
    0,
    'every worker replaced',
  );

  await deleteCluster('wk');
  await assertGone('wk');
});
