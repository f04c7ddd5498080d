import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadManifests } from '../../src/api/load-manifests';
import type { ClusterModel } from '../../src/api/model';
import { MachinePhase } from '../../src/contract/machine';
import type { MachineRecord } from '../../src/contract/owner';
import { appliedText } from '../../src/cli/apply-text';
import {
  previewApply,
  upgradeSteps,
  type RunningOwner,
  type RunningOwners,
  type UpgradeStep,
} from '../../workflows/cluster/apply-preview';
import { creationDiff, diffClusterModels } from '../../workflows/cluster/cluster-diff';
import { controlPlaneMachineHash, templateHash } from '../../workflows/control-plane/control-plane-revisions';
import { machineSetHash, machineTemplateHash } from '../../workflows/machine-deployment/machine-sets';
import { newRecord } from '../../workflows/shared/machine-pool';

const quickstart = readFileSync(join(__dirname, '../../../examples/quickstart.yaml'), 'utf8');
const load = (vars: Record<string, string> = {}) =>
  loadManifests([{ file: 'quickstart.yaml', text: quickstart }], {
    CLUSTER_NAME: 'q',
    KUBERNETES_VERSION: 'v1.35.4',
    ...vars,
  })[0]!;
const now = Date.parse('2026-06-01T12:00:00Z');

/** A Running machine created from `hash` at `createdAt`, long enough ago to be available. */
const machine = (
  name: string,
  hash: string,
  createdAt = '2026-06-01T10:00:00.000Z',
  extra: Partial<MachineRecord> = {},
): MachineRecord => ({
  ...newRecord(name, hash, 'v1.35.4', createdAt),
  phase: MachinePhase.Running,
  runningSince: createdAt,
  ...extra,
});

/** The owners of `model` as its workflows run it: every machine on the current template (restarted at `restartedAt`, if given). */
function runningOf(
  model: ClusterModel,
  workers: MachineRecord[] | undefined = undefined,
  restartedAt?: string,
): RunningOwners {
  const md = model.machineDeployments[0]!;
  const mdHash = machineSetHash(md.template, restartedAt);
  const owner = (replicas: number, machines: MachineRecord[]): RunningOwner => ({
    version: model.controlPlane.version,
    replicas,
    paused: false,
    machines,
    restartedAt,
  });
  return {
    controlPlane: owner(model.controlPlane.replicas, [
      machine('q-control-plane-aaaaa', controlPlaneMachineHash(model.controlPlane, restartedAt)),
    ]),
    machineDeployments: {
      [md.name]: owner(md.replicas, workers ?? [machine('q-md-0-x-ccccc', mdHash), machine('q-md-0-x-bbbbb', mdHash)]),
    },
  };
}

const preview = (previous: ClusterModel, next: ClusterModel, running = runningOf(previous)) => {
  const templates = {
    controlPlane: templateHash(previous.controlPlane),
    machineDeployments: {
      [previous.machineDeployments[0]!.name]: machineTemplateHash(previous.machineDeployments[0]!.template),
    },
  };
  return previewApply(previous, next, diffClusterModels(previous, next, templates), running, now);
};

test('dry run: a version change replaces every control-plane machine and, once the control plane runs it, every worker', () => {
  const base = load();
  const p = preview(base, load({ KUBERNETES_VERSION: 'v1.36.3' }));
  assert.deepEqual(p.controlPlane, { replaced: ['q-control-plane-aaaaa'], added: 0, removed: 0 });
  assert.deepEqual(p.machineDeployments['q-md-0'], {
    replaced: ['q-md-0-x-ccccc', 'q-md-0-x-bbbbb'],
    replacedWhen: 'once the control plane runs v1.36.3',
    added: 0,
    removed: 0,
  });
  assert.deepEqual(
    preview(base, load()).machineDeployments['q-md-0'],
    { replaced: [], added: 0, removed: 0 },
    'nothing changes: nothing replaced',
  );
});

test('dry run: labels and maxSurge change in place; a machine already on another template is replaced by any template change', () => {
  const base = load();
  const labelled = structuredClone(base);
  labelled.machineDeployments[0]!.template.labels = { tier: 'gold' };
  labelled.machineDeployments[0]!.strategy.maxSurge = 2;
  assert.deepEqual(preview(base, labelled).machineDeployments['q-md-0']!.replaced, [], 'in place: no machine replaced');
  const paused = structuredClone(base);
  paused.machineDeployments[0]!.paused = true;
  paused.machineDeployments[0]!.template.version = 'v1.36.3';
  paused.controlPlane.version = 'v1.36.3';
  assert.equal(
    preview(base, paused).machineDeployments['q-md-0']!.replacedWhen,
    'after `capt rollout resume`',
    'a paused deployment replaces them only after resume',
  );
});

test("dry run: a restart's revision keeps its time, so a label change after it replaces nothing and a version change replaces all", () => {
  const base = load();
  const restarted = runningOf(base, undefined, '2026-05-01T00:00:00.000Z');
  const labelled = structuredClone(base);
  labelled.machineDeployments[0]!.template.labels = { tier: 'gold' };
  assert.deepEqual(preview(base, labelled, restarted).machineDeployments['q-md-0']!.replaced, []);
  assert.equal(
    preview(base, load({ KUBERNETES_VERSION: 'v1.36.3' }), restarted).machineDeployments['q-md-0']!.replaced.length,
    2,
  );
});

test('dry run: rolloutAfter replaces the machines once it has passed, and none while it is ahead', () => {
  const base = load();
  const due = structuredClone(base);
  due.machineDeployments[0]!.rolloutAfter = '2026-06-01T11:00:00.000Z';
  due.controlPlane.rolloutAfter = '2026-06-01T11:00:00.000Z';
  const p = preview(base, due);
  assert.deepEqual(p.machineDeployments['q-md-0']!.replaced, ['q-md-0-x-ccccc', 'q-md-0-x-bbbbb']);
  assert.deepEqual(p.controlPlane.replaced, ['q-control-plane-aaaaa']);
  const ahead = structuredClone(base);
  ahead.machineDeployments[0]!.rolloutAfter = '2026-06-02T00:00:00.000Z';
  assert.deepEqual(preview(base, ahead).machineDeployments['q-md-0']!.replaced, []);
});

test('dry run: certificatesExpiryDays replaces the control-plane machines whose certificate expires within it', () => {
  const base = load({ CONTROL_PLANE_MACHINE_COUNT: '3' });
  const hash = controlPlaneMachineHash(base.controlPlane, undefined);
  const running = runningOf(base);
  running.controlPlane = {
    version: base.controlPlane.version,
    replicas: 3,
    paused: false,
    machines: ['a', 'b', 'c'].map((n) => machine(`q-control-plane-${n}`, hash)),
    certificatesExpireAt: {
      'q-control-plane-a': '2026-06-20T00:00:00Z',
      'q-control-plane-b': '2027-05-01T00:00:00Z',
      'q-control-plane-c': '2027-05-01T00:00:00Z',
    },
  };
  const next = structuredClone(base);
  next.controlPlane.certificatesExpiryDays = 30;
  assert.deepEqual(preview(base, next, running).controlPlane.replaced, ['q-control-plane-a']);
});

test('dry run: scaling adds a count; a settled deployment names the machines it removes (marked, then by name), a rolling one only counts them', () => {
  const base = load({ WORKER_MACHINE_COUNT: '3' });
  const hash = machineSetHash(base.machineDeployments[0]!.template, undefined);
  const workers = [
    machine('q-md-0-x-aaaaa', hash),
    machine('q-md-0-x-bbbbb', hash),
    machine('q-md-0-x-ccccc', hash, undefined, { marked: true }),
  ];
  assert.deepEqual(
    preview(base, load({ WORKER_MACHINE_COUNT: '1' }), runningOf(base, workers)).machineDeployments['q-md-0'],
    {
      replaced: [],
      added: 0,
      removed: ['q-md-0-x-ccccc', 'q-md-0-x-aaaaa'],
    },
  );
  assert.equal(
    preview(base, load({ WORKER_MACHINE_COUNT: '5' }), runningOf(base, workers)).machineDeployments['q-md-0']!.added,
    2,
  );
  const rolling = [...workers.slice(0, 2), machine('q-md-0-y-ddddd', 'an-older-template')];
  assert.equal(
    preview(base, load({ WORKER_MACHINE_COUNT: '1' }), runningOf(base, rolling)).machineDeployments['q-md-0']!.removed,
    2,
    'during a rollout, only how many',
  );
  const cp = preview(load({ CONTROL_PLANE_MACHINE_COUNT: '3' }), load({ CONTROL_PLANE_MACHINE_COUNT: '1' }), {
    ...runningOf(base),
    controlPlane: { version: base.controlPlane.version, replicas: 3, paused: false, machines: [] },
  });
  assert.equal(
    cp.controlPlane.removed,
    2,
    'the control plane picks each leaving machine by its health at that step: only how many',
  );
});

test('dry run: a new cluster creates every replica; a MachineDeployment the manifest drops goes with all its machines', () => {
  const base = load();
  const created = previewApply(undefined, base, creationDiff(base), { machineDeployments: {} }, now);
  assert.deepEqual([created.controlPlane.added, created.machineDeployments['q-md-0']!.added], [1, 2]);
  const dropped = preview(base, { ...base, machineDeployments: [] });
  assert.deepEqual(dropped.removed['q-md-0'], {
    replaced: [],
    added: 0,
    removed: ['q-md-0-x-ccccc', 'q-md-0-x-bbbbb'],
  });
});

test("dry run of a ClusterClass cluster's chained upgrade: each step of Cluster API's plan, and whether the endpoint stays available", () => {
  const classCluster = (version: string, controlPlanes: string): ClusterModel => {
    const model = load({ KUBERNETES_VERSION: version, CONTROL_PLANE_MACHINE_COUNT: controlPlanes });
    const md = model.machineDeployments[0]!;
    return {
      ...model,
      topology: {
        class: 'quick-start',
        kubernetesVersions: ['v1.34.4', 'v1.35.4', 'v1.36.3'],
        upgradeConcurrency: 1,
        machineDeployments: [{ name: md.name, topologyName: 'md-0', deferUpgrade: false, holdUpgradeSequence: false }],
      },
    };
  };
  const text = (steps: UpgradeStep[]) =>
    appliedText({ ref: 'cluster.cluster.x-k8s.io/q', outcome: 'configured', upgradePlan: steps }, true);
  assert.equal(
    text(upgradeSteps(classCluster('v1.36.3', '3'), 'v1.34.4', 'v1.34.4')),
    [
      'cluster.cluster.x-k8s.io/q configured (dry run)',
      '  upgrade plan:',
      '    1. control plane v1.34.4 -> v1.35.4: available; 3 machines replaced one at a time, each new one joining first: the endpoint stays available',
      '    2. control plane v1.35.4 -> v1.36.3: available; 3 machines replaced one at a time, each new one joining first: the endpoint stays available',
      '    3. workers v1.34.4 -> v1.36.3: available; MachineDeployments md-0 in topology order, 1 at a time, each with maxUnavailable 0',
    ].join('\n'),
  );
  const single = upgradeSteps(classCluster('v1.36.3', '1'), 'v1.34.4', 'v1.34.4');
  assert.deepEqual(
    single.map((s) => [s.owner, s.to, s.available]),
    [
      ['control plane', 'v1.35.4', false],
      ['control plane', 'v1.36.3', false],
      ['workers', 'v1.36.3', true],
    ],
  );
  assert.match(single[0]!.note, /1 control-plane machine: the endpoint may not answer while it is replaced/);

  // previewApply plans from the control plane and workers as they run, not from the last applied model.
  const running = runningOf(classCluster('v1.34.4', '3'));
  running.controlPlane!.version = 'v1.35.4';
  const next = classCluster('v1.36.3', '3');
  const preview = previewApply(
    classCluster('v1.34.4', '3'),
    next,
    diffClusterModels(classCluster('v1.34.4', '3'), next, { machineDeployments: {} }),
    running,
    now,
  );
  assert.deepEqual(
    preview.upgradePlan?.map((s) => `${s.owner} ${s.from} -> ${s.to}`),
    ['control plane v1.35.4 -> v1.36.3', 'workers v1.34.4 -> v1.36.3'],
  );
});
