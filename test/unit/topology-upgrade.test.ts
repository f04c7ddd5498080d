import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TopologyModel } from '../../src/api/model';
import { topologyHoldReason, topologyReleases } from '../../workflows/cluster/topology-upgrade';

const topology = (
  concurrency: number,
  flags: Record<string, { defer?: boolean; hold?: boolean }> = {},
  names = ['a', 'b', 'c', 'd'],
): TopologyModel => ({
  class: 'quick-start',
  upgradeConcurrency: concurrency,
  machineDeployments: names.map((n) => ({
    name: `dev-${n}-xxxxx`,
    topologyName: n,
    deferUpgrade: flags[n]?.defer ?? false,
    holdUpgradeSequence: flags[n]?.hold ?? false,
  })),
});
const md = (n: string) => `dev-${n}-xxxxx`;
const all = ['a', 'b', 'c', 'd'].map(md);
const none = () => false;

test('after the control plane, MachineDeployments upgrade in topology order, upgrade-concurrency at a time', () => {
  assert.deepEqual(topologyReleases(topology(1), all, none), [md('a')]);
  assert.deepEqual(topologyReleases(topology(2), all, none), [md('a'), md('b')]);
  assert.deepEqual(topologyReleases(topology(9), all, none), all);
  // a is released and still rolling out: with concurrency 1, b waits; once a is done, b goes.
  const rest = all.slice(1);
  assert.deepEqual(
    topologyReleases(topology(1), rest, (n) => n === md('a')),
    [],
  );
  assert.deepEqual(topologyReleases(topology(1), rest, none), [md('b')]);
  assert.deepEqual(
    topologyReleases(topology(2), rest, (n) => n === md('a')),
    [md('b')],
  );
});

test('defer-upgrade skips a MachineDeployment; hold-upgrade-sequence holds it and every one after it', () => {
  assert.deepEqual(topologyReleases(topology(1, { a: { defer: true } }), all, none), [md('b')]);
  assert.deepEqual(topologyReleases(topology(9, { b: { defer: true } }), all, none), [md('a'), md('c'), md('d')]);
  assert.deepEqual(topologyReleases(topology(9, { c: { hold: true } }), all, none), [md('a'), md('b')]);
  assert.deepEqual(topologyReleases(topology(9, { a: { hold: true } }), all, none), []);
  // A MachineDeployment not held (it had no new version) neither counts nor holds others.
  assert.deepEqual(topologyReleases(topology(1, { a: { hold: true } }), [md('b')], none), [md('b')]);
});

test('a held MachineDeployment says why it waits', () => {
  assert.match(
    topologyHoldReason(topology(1), all.slice(1), md('b'), (n) => n === md('a')),
    /^waits its turn in the topology's order \(upgrade concurrency 1; upgrading: a\)$/,
  );
  assert.match(
    topologyHoldReason(topology(1, { b: { defer: true } }), all, md('b'), none),
    /^deferred: its topology has topology\.cluster\.x-k8s\.io\/defer-upgrade$/,
  );
  assert.match(
    topologyHoldReason(topology(9, { b: { hold: true } }), all, md('d'), none),
    /^held: MachineDeployment topology b has topology\.cluster\.x-k8s\.io\/hold-upgrade-sequence$/,
  );
});
