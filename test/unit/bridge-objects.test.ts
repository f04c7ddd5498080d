import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { loadManifests } from '../../src/api/load-manifests';
import { substituteVariables } from '../../src/api/variables';
import {
  clusterManifest,
  clusterObjects,
  ownedByCluster,
  sharedByClusters,
  type ObjectsByKind,
} from '../../src/bridge/cluster-documents';
import { clusterObjectStatus, ownerObjectStatus, type ApiCondition } from '../../src/bridge/cluster-status-out';
import {
  labelSelector,
  labelsGone,
  machineObject,
  machineSetLabelsPatch,
  machineSetObject,
  machineSetSelector,
  mirroredLabelsAnnotation,
} from '../../src/bridge/machine-objects';
import type { ApiObject, ManagedKind } from '../../src/bridge/management-client';
import type { ClusterView } from '../../src/contract/cluster';
import { MachinePhase, type MachineStatus } from '../../src/contract/machine';
import { machineDeploymentMachineLabels } from '../../src/contract/machine-labels';
import type { MachineRecord, OwnerStatus } from '../../src/contract/owner';

/** The quickstart's objects as the management API would list them: with server fields and in the `default` namespace. */
function apiObjects(cluster: string): ObjectsByKind {
  const { text } = substituteVariables(readFileSync(join(__dirname, '../../../examples/quickstart.yaml'), 'utf8'), {
    CLUSTER_NAME: cluster,
    CONTROL_PLANE_MACHINE_COUNT: '1',
    WORKER_MACHINE_COUNT: '2',
  });
  const objects: ObjectsByKind = {};
  for (const doc of parseAllDocuments(text)) {
    const o = doc.toJSON() as ApiObject;
    o.metadata = {
      ...o.metadata,
      namespace: 'default',
      uid: `uid-${o.metadata.name}`,
      resourceVersion: '7',
      generation: 1,
      // Tools' bookkeeping, not desired state: kubectl's last apply, the bridge's applied manifest, conversion data.
      annotations: {
        'kubectl.kubernetes.io/last-applied-configuration': '{}',
        'capt.cluster.x-k8s.io/applied-manifest': 'abc',
        'cluster.x-k8s.io/conversion-data': '{"restores":"v1beta1","fields":[]}',
      },
    };
    o.status = { phase: 'Provisioned' };
    (objects[o.kind as ManagedKind] ??= []).push(o);
  }
  return objects;
}

test("a Cluster's manifest from the management API loads as the same model as the file it came from", () => {
  const objects = apiObjects('one');
  // Another cluster's objects in the same namespace are not part of this one's manifest.
  for (const [kind, list] of Object.entries(apiObjects('two'))) objects[kind as ManagedKind]!.push(...list);
  const cluster = objects.Cluster!.find((c) => c.metadata.name === 'one')!;
  const manifest = clusterManifest(cluster, clusterObjects(cluster, objects));
  assert.equal(manifest.file, 'management API, Cluster default/one');
  assert.doesNotMatch(manifest.text, /\btwo\b|last-applied|applied-manifest|conversion-data|resourceVersion|status:/);
  const [fromApi, ...more] = loadManifests([manifest], {});
  assert.equal(more.length, 0);
  const { text } = substituteVariables(readFileSync(join(__dirname, '../../../examples/quickstart.yaml'), 'utf8'), {
    CLUSTER_NAME: 'one',
    CONTROL_PLANE_MACHINE_COUNT: '1',
    WORKER_MACHINE_COUNT: '2',
  });
  const [fromFile] = loadManifests([{ file: 'quickstart.yaml', text }], {});
  assert.deepEqual(fromApi, { ...fromFile, annotations: {} });
});

test('Machines the bridge made for a MachineSet or control plane are not desired state; standalone ones are', () => {
  const objects = apiObjects('one');
  const machine = (name: string, owner?: string): ApiObject => ({
    apiVersion: 'cluster.x-k8s.io/v1beta2',
    kind: 'Machine',
    metadata: {
      name,
      namespace: 'default',
      ...(owner
        ? { ownerReferences: [{ apiVersion: 'cluster.x-k8s.io/v1beta2', kind: owner, name: 'x', uid: 'u' }] }
        : {}),
    },
    spec: { clusterName: 'one' },
  });
  objects.Machine = [
    machine('made-by-set', 'MachineSet'),
    machine('made-by-kcp', 'KubeadmControlPlane'),
    machine('mine'),
  ];
  const text = clusterManifest(objects.Cluster![0]!, clusterObjects(objects.Cluster![0]!, objects)).text;
  assert.match(text, /name: mine/);
  assert.doesNotMatch(text, /made-by/);
});

const view = (fields: Partial<ClusterView>): ClusterView => ({
  namespace: 'default',
  name: 'one',
  provider: 'local',
  phase: 'Provisioned',
  version: 'v1.36.3',
  endpoint: '127.1.0.1:6443',
  createdAt: '2026-11-25T00:00:00Z',
  machineDeployments: [],
  machines: [],
  conditions: [
    { type: 'Available', status: 'True' },
    { type: 'InfrastructureReady', status: 'True' },
    { type: 'ControlPlaneInitialized', status: 'True' },
    { type: 'ControlPlaneAvailable', status: 'True' },
    { type: 'WorkersAvailable', status: 'False', reason: 'WorkersNotAvailable', message: 'md not available' },
  ],
  step: 'running',
  stepReason: 'Running' as ClusterView['stepReason'],
  paused: false,
  generation: 2,
  observedGeneration: 2,
  pending: [],
  recoveries: [],
  ...fields,
});

test("the Cluster object's status: v1beta2 conditions with reasons, times kept while they hold, observedGeneration only when observed", () => {
  const first = clusterObjectStatus(view({}), undefined, { generation: 5, observed: true, now: 'T1' });
  const conditions = first.conditions as ApiCondition[];
  assert.deepEqual(
    conditions.map((c) => [c.type, c.status, c.reason, c.lastTransitionTime, c.observedGeneration]),
    [
      ['Available', 'True', 'Available', 'T1', 5],
      ['InfrastructureReady', 'True', 'Ready', 'T1', 5],
      ['ControlPlaneInitialized', 'True', 'Initialized', 'T1', 5],
      ['ControlPlaneAvailable', 'True', 'Available', 'T1', 5],
      ['WorkersAvailable', 'False', 'WorkersNotAvailable', 'T1', 5],
      ['RollingOut', 'False', 'NotRollingOut', 'T1', 5],
      ['Paused', 'False', 'NotPaused', 'T1', 5],
      ['Deleting', 'False', 'NotDeleting', 'T1', 5],
    ],
  );
  assert.equal(first.observedGeneration, 5);
  assert.deepEqual(first.initialization, { infrastructureProvisioned: true, controlPlaneInitialized: false });

  // Later, workers available and a new generation not yet carried out: only the changed condition moves.
  const next = clusterObjectStatus(
    view({ conditions: view({}).conditions.map((c) => ({ type: c.type, status: 'True' as const })) }),
    { conditions, observedGeneration: 5 },
    { generation: 6, observed: false, now: 'T2' },
  );
  const times = Object.fromEntries((next.conditions as ApiCondition[]).map((c) => [c.type, c.lastTransitionTime]));
  assert.equal(times.WorkersAvailable, 'T2');
  assert.equal(times.Available, 'T1');
  assert.equal(next.observedGeneration, 5, 'a spec not carried out yet keeps the generation observed before');
  assert.ok((next.conditions as ApiCondition[]).every((c) => c.observedGeneration === undefined));
});

test('a rollout in progress shows as RollingOut with what rolls out; a deletion as Deleting', () => {
  const rolling = clusterObjectStatus(
    view({
      pending: [
        {
          kind: 'MachineDeployment',
          name: 'one-md-0',
          generation: 2,
          reason: 'RollingOut',
          message: 'rolling out v1.36.3 (revision 2)',
        },
      ],
    }),
    undefined,
    { generation: 2, observed: true, now: 'T' },
  );
  assert.deepEqual(
    (rolling.conditions as ApiCondition[]).find((c) => c.type === 'RollingOut'),
    {
      type: 'RollingOut',
      status: 'True',
      reason: 'RollingOut',
      message: 'MachineDeployment one-md-0: rolling out v1.36.3 (revision 2)',
      lastTransitionTime: 'T',
      observedGeneration: 2,
    },
  );
  const deleting = clusterObjectStatus(view({ phase: 'Deleting', step: 'deleting workers' }), undefined, {
    generation: 2,
    observed: false,
    now: 'T',
  });
  assert.equal(deleting.phase, 'Deleting');
  assert.deepEqual(
    (deleting.conditions as ApiCondition[]).find((c) => c.type === 'Deleting'),
    { type: 'Deleting', status: 'True', reason: 'Deleting', message: 'deleting workers', lastTransitionTime: 'T' },
  );
});

test("a MachineDeployment's status: the scale subresource's replicas and selector, counts without leaving machines, its phase", () => {
  const record = (name: string, fields: Partial<MachineRecord> = {}): MachineRecord => ({
    name,
    templateHash: 'new',
    version: 'v1.36.3',
    createdAt: 'T0',
    phase: MachinePhase.Running,
    deleting: false,
    marked: false,
    sequence: 1,
    ...fields,
  });
  const md: OwnerStatus = {
    kind: 'MachineDeployment',
    namespace: 'default',
    name: 'one-md-0',
    cluster: 'one',
    version: 'v1.36.3',
    revision: 2,
    templateHash: 'new',
    replicas: 2,
    initialized: true,
    ready: false,
    available: true,
    failedMachines: 0,
    deleted: false,
    rolloutComplete: false,
    observedGeneration: 2,
    sequence: 9,
    readyReplicas: 2,
    availableReplicas: 2,
    updatedReplicas: 1,
    paused: false,
    step: 'rolling out',
    stepReason: 'RollingOut' as OwnerStatus['stepReason'],
    conditions: [{ type: 'Available', status: 'True' }],
    // Mid-rollout with maxSurge 1: two old machines (one leaving) and one new one.
    machines: [record('a', { templateHash: 'old' }), record('b', { templateHash: 'old', deleting: true }), record('c')],
  };
  const status = ownerObjectStatus(md, view({}), 'cluster.x-k8s.io/deployment-name=one-md-0', undefined, {
    generation: 3,
    observed: false,
    now: 'T',
  });
  assert.deepEqual(
    { ...status, conditions: undefined },
    {
      selector: 'cluster.x-k8s.io/deployment-name=one-md-0',
      replicas: 2,
      readyReplicas: 2,
      availableReplicas: 2,
      upToDateReplicas: 1,
      conditions: undefined,
      phase: 'Running',
    },
  );
  assert.deepEqual(status.conditions, [
    { type: 'Available', status: 'True', reason: 'Available', message: '', lastTransitionTime: 'T' },
  ]);
  const scalingUp = ownerObjectStatus({ ...md, replicas: 3 }, view({}), 's', undefined, {
    generation: 3,
    observed: true,
    now: 'T',
  });
  assert.deepEqual([scalingUp.phase, scalingUp.observedGeneration], ['ScalingUp', 3]);
  // A version change held for the control plane: the object asks for it, so no machine is up to date yet.
  const waiting = 'v1.36.3 waits until the control plane runs v1.36.3 (kubelets may not be newer than the apiserver)';
  const heldView = view({
    pending: [
      { kind: 'MachineDeployment', name: 'one-md-0', generation: 3, reason: 'HeldForControlPlane', message: waiting },
    ],
  });
  const held = ownerObjectStatus(
    { ...md, machines: [record('a'), record('c')], updatedReplicas: 2 },
    heldView,
    's',
    undefined,
    {
      generation: 3,
      observed: false,
      now: 'T',
    },
  );
  assert.equal(held.upToDateReplicas, 0);
  assert.deepEqual(
    (held.conditions as ApiCondition[]).find((c) => c.type === 'RollingOut'),
    {
      type: 'RollingOut',
      status: 'True',
      reason: 'HeldForControlPlane',
      message: waiting,
      lastTransitionTime: 'T',
    },
  );
});

/** Does `selector` (matchLabels) select an object carrying `labels`? */
const selects = (selector: Record<string, string>, labels: Record<string, string> | undefined) =>
  Object.entries(selector).every(([k, v]) => labels?.[k] === v);

test("a MachineDeployment's selector finds its MachineSet and the set's selector its machines, as Cluster API's e2e framework lists them", () => {
  const deployment = apiObjects('one').MachineDeployment![0]!;
  const mdSelector = (deployment.spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels;
  const set = machineSetObject(
    deployment,
    { name: 'one-md-0-abc12', hash: 'abc12', version: 'v1.36.3', machines: 2, ready: 2 } as Parameters<
      typeof machineSetObject
    >[1],
    'one',
  );
  assert.ok(
    selects(mdSelector, set.metadata.labels),
    `${JSON.stringify(mdSelector)} selects ${JSON.stringify(set.metadata.labels)}`,
  );
  const setSpec = set.spec as {
    selector: { matchLabels: Record<string, string> };
    template: { metadata: { labels: Record<string, string> } };
  };
  assert.deepEqual(setSpec.selector.matchLabels, {
    ...mdSelector,
    'cluster.x-k8s.io/cluster-name': 'one',
    'machine-template-hash': 'abc12',
  });
  assert.ok(selects(setSpec.selector.matchLabels, setSpec.template.metadata.labels));
  assert.equal(
    machineSetSelector(set),
    `${labelSelector(mdSelector)},cluster.x-k8s.io/cluster-name=one,machine-template-hash=abc12`,
  );
  // The machine's labels as its workflow carries them (the template's, the deployment's, the set's name); the
  // object adds the template hash, which only a set's machines have.
  const labels = machineDeploymentMachineLabels('one', 'one-md-0', {
    ...(deployment.spec as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels,
    'cluster.x-k8s.io/set-name': set.metadata.name,
  });
  const status = {
    namespace: 'default',
    name: 'one-md-0-abc12-x',
    cluster: 'one',
    labels,
    annotations: {},
    version: 'v1.36.3',
    sequence: 1,
  } as unknown as MachineStatus;
  assert.ok(selects(setSpec.selector.matchLabels, machineObject(status, set, 'LocalMachine').metadata.labels));
  const controlPlane = apiObjects('one').KubeadmControlPlane![0]!;
  assert.equal(
    machineObject(status, controlPlane, 'LocalMachine').metadata.labels?.['machine-template-hash'],
    undefined,
  );

  // A deployment without a selector, or with an empty one, is selected by its name, as Cluster API's webhook
  // defaults it.
  for (const selector of [undefined, { matchLabels: {} }]) {
    const bare = { ...deployment, spec: { ...(deployment.spec as object), selector } };
    const bareSet = machineSetObject(bare, { name: 's', hash: 'h' } as Parameters<typeof machineSetObject>[1], 'one');
    assert.deepEqual((bareSet.spec as typeof setSpec).selector.matchLabels, {
      'cluster.x-k8s.io/deployment-name': 'one-md-0',
      'cluster.x-k8s.io/cluster-name': 'one',
      'machine-template-hash': 'h',
    });
  }
});

test('the Cluster becomes an owner of the templates its control plane and MachineDeployments reference, without labelling them', () => {
  const objects = apiObjects('one');
  const members = clusterObjects(objects.Cluster![0]!, objects);
  assert.deepEqual(
    members
      .filter(sharedByClusters)
      .map((o) => `${o.kind}/${o.metadata.name}`)
      .sort(),
    ['KubeadmConfigTemplate/one-md-0', 'LocalMachineTemplate/one-control-plane', 'LocalMachineTemplate/one-md-0'],
  );
  assert.ok(members.filter(sharedByClusters).every((o) => !ownedByCluster(o)));
});

test("the labels the bridge wrote on a Machine and the machine no longer has are the ones removed; a set's labels follow its deployment's", () => {
  const written = {
    apiVersion: 'cluster.x-k8s.io/v1beta2',
    kind: 'Machine',
    metadata: {
      name: 'm',
      namespace: 'default',
      labels: { a: '1', b: '2', own: 'x' },
      annotations: { [mirroredLabelsAnnotation]: 'a,b' },
    },
  } as ApiObject;
  assert.deepEqual(labelsGone(written, { a: '1' }), ['b']);
  assert.deepEqual(
    labelsGone({ ...written, metadata: { name: 'm', namespace: 'default', labels: { b: '2' } } }, {}),
    [],
  );
  const set = (labels: Record<string, string>) =>
    ({ metadata: { name: 's', namespace: 'default', labels } }) as ApiObject;
  assert.equal(machineSetLabelsPatch(set({ a: '1' }), set({ a: '1' })), undefined);
  assert.deepEqual(machineSetLabelsPatch(set({ a: '1', gone: 'y' }), set({ a: '2' })), {
    metadata: { labels: { a: '2', gone: null } },
    spec: { template: { metadata: { labels: { a: '2', gone: null } } } },
  });
});

test("a ClusterClass cluster's upgrade shows in the Cluster's status: versions in use with their replicas, and the plan left, removed once done", () => {
  const record = (name: string, version: string, deleting = false): MachineRecord => ({
    name,
    templateHash: version,
    version,
    createdAt: 'T0',
    phase: MachinePhase.Running,
    deleting,
    marked: false,
    sequence: 1,
  });
  const owner = (kind: OwnerStatus['kind'], name: string, machines: MachineRecord[]) =>
    ({
      kind,
      name,
      namespace: 'default',
      replicas: 3,
      machines,
      readyReplicas: 3,
      availableReplicas: 3,
      updatedReplicas: 1,
    }) as OwnerStatus;
  const controlPlane = owner('KubeadmControlPlane', 'one-cp', [
    record('cp-a', 'v1.34.4'),
    record('cp-b', 'v1.34.4', true),
    record('cp-c', 'v1.35.4'),
    record('cp-d', 'v1.35.4'),
  ]);
  const workers = owner('MachineDeployment', 'one-md-0', [record('w-a', 'v1.34.4'), record('w-b', 'v1.34.4')]);
  const o = { generation: 2, observed: true, now: 'T' };
  const mid = clusterObjectStatus(
    view({
      controlPlane,
      machineDeployments: [workers],
      upgradePlan: { controlPlane: ['v1.36.3'], workers: ['v1.36.3'] },
    }),
    undefined,
    o,
  );
  const group = (s: Record<string, unknown>, key: string) => s[key] as Record<string, unknown>;
  assert.deepEqual(group(mid, 'controlPlane').versions, [
    { version: 'v1.34.4', replicas: 1 },
    { version: 'v1.35.4', replicas: 2 },
  ]);
  assert.deepEqual(group(mid, 'controlPlane').upgradePlan, [{ version: 'v1.36.3' }]);
  assert.deepEqual(group(mid, 'workers').versions, [{ version: 'v1.34.4', replicas: 2 }]);
  assert.deepEqual(group(mid, 'workers').upgradePlan, [{ version: 'v1.36.3' }]);

  // Done: the plan written before is removed (a merge patch keeps what it does not name); never written, it is absent.
  const done = view({ controlPlane, machineDeployments: [workers] });
  const after = clusterObjectStatus(
    done,
    { controlPlane: group(mid, 'controlPlane'), workers: group(mid, 'workers') },
    o,
  );
  assert.equal(group(after, 'controlPlane').upgradePlan, null);
  assert.equal(group(after, 'workers').upgradePlan, null);
  assert.ok(!('upgradePlan' in group(clusterObjectStatus(done, undefined, o), 'workers')));
});
