import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadManifests } from '../../src/api/load-manifests';
import type { ClusterModel } from '../../src/api/model';
import { diffClusterModels } from '../../workflows/cluster/cluster-diff';
import { clusterChangeProblems } from '../../src/spec-rules/cluster-rules';
import { templateHash } from '../../workflows/control-plane/control-plane-revisions';
import { machineTemplateHash } from '../../workflows/machine-deployment/machine-sets';

const quickstart = readFileSync(join(__dirname, '../../../examples/quickstart.yaml'), 'utf8');
const load = (vars: Record<string, string> = {}) =>
  loadManifests([{ file: 'quickstart.yaml', text: quickstart }], vars)[0]!;
const runningOf = (m: ClusterModel) => ({
  controlPlane: templateHash(m.controlPlane),
  machineDeployments: Object.fromEntries(m.machineDeployments.map((md) => [md.name, machineTemplateHash(md.template)])),
});
const outcomes = (previous: ClusterModel, next: ClusterModel, running = runningOf(previous)) => {
  const d = diffClusterModels(previous, next, running);
  return [
    d.cluster,
    d.controlPlane.outcome,
    ...d.machineDeployments.map((m) => m.outcome),
    ...d.removed.map((n) => `removed ${n}`),
  ];
};

test('cluster diff: per-object outcomes as kubectl prints them, for every field capt acts on', () => {
  const base = load();
  assert.deepEqual(outcomes(base, load()), ['unchanged', 'unchanged', 'unchanged']);
  const labelled = structuredClone(base);
  labelled.machineDeployments[0]!.template.labels = {
    ...labelled.machineDeployments[0]!.template.labels,
    tier: 'gold',
  };
  assert.deepEqual(
    outcomes(base, labelled),
    ['unchanged', 'unchanged', 'configured'],
    'a template label alone configures the MachineDeployment',
  );
  const surge = structuredClone(base);
  surge.machineDeployments[0]!.strategy = { ...surge.machineDeployments[0]!.strategy, maxSurge: 2 };
  const diff = diffClusterModels(base, surge, runningOf(base));
  assert.deepEqual(
    [diff.machineDeployments[0]!.outcome, diff.machineDeployments[0]!.spec, diff.machineDeployments[0]!.scale],
    ['configured', true, false],
  );
  assert.deepEqual(outcomes(base, load({ WORKER_MACHINE_COUNT: '3' })), ['unchanged', 'unchanged', 'configured']);
  assert.deepEqual(
    diffClusterModels(base, load({ WORKER_MACHINE_COUNT: '3' }), runningOf(base)).machineDeployments[0]!.spec,
    false,
    'a scale is no spec change',
  );
  assert.deepEqual(
    outcomes(base, load({ SERVICE_DOMAIN: 'fleet.example' })),
    ['configured', 'unchanged', 'unchanged'],
    'a cluster field configures the Cluster',
  );
  const undone = { ...runningOf(base), controlPlane: 'an-undone-template' };
  assert.deepEqual(
    diffClusterModels(base, load(), undone).controlPlane.spec,
    true,
    "after an undo, apply restores the manifest's template",
  );
  const withoutMd = { ...base, machineDeployments: [] };
  assert.deepEqual(outcomes(base, withoutMd), [
    'unchanged',
    'unchanged',
    `removed ${base.machineDeployments[0]!.name}`,
  ]);
  assert.deepEqual(outcomes(withoutMd, base), ['unchanged', 'unchanged', 'created']);
});

test('cluster diff: standalone Machines are created, configured in place, pruned; a change only a new Machine can make is refused', () => {
  const base = load();
  const lone = {
    name: 'lone',
    template: { ...structuredClone(base.machineDeployments[0]!.template), labels: { role: 'lone' } },
  };
  const withLone = { ...base, machines: [lone] };
  const relabelled = { ...base, machines: [{ ...lone, template: { ...lone.template, labels: { role: 'solo' } } }] };
  const d = (a: ClusterModel, b: ClusterModel) => {
    const diff = diffClusterModels(a, b, runningOf(a));
    return [diff.cluster, diff.machines.map((m) => `${m.name} ${m.outcome}`), diff.removedMachines];
  };
  assert.deepEqual(d(base, withLone), ['unchanged', ['lone created'], []]);
  assert.deepEqual(d(withLone, relabelled), ['unchanged', ['lone configured'], []]);
  assert.deepEqual(d(withLone, base), ['unchanged', [], ['lone']]);
  const upgraded = { ...base, machines: [{ ...lone, template: { ...lone.template, version: 'v1.37.0' } }] };
  assert.deepEqual(
    clusterChangeProblems(withLone, relabelled).map((p) => p.path),
    [],
  );
  assert.deepEqual(
    clusterChangeProblems(withLone, upgraded)
      .filter((p) => p.kind === 'Machine')
      .map((p) => [p.name, p.path, p.message]),
    [['lone', 'spec.version', 'version cannot change on an existing Machine']],
  );
});
