import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseAllDocuments, stringify } from 'yaml';
import { loadManifests } from '../../src/api/load-manifests';
import { substituteVariables } from '../../src/api/variables';
import type { AdmissionRequest } from '../../src/bridge/admission-review';
import { defaultingPatch } from '../../src/bridge/defaulting-route';
import { defaultingConfiguration } from '../../src/bridge/defaulting-registration';
import type { ApiObject } from '../../src/bridge/management-client';
import { machineDeploymentMachineLabels } from '../../src/contract/machine-labels';
import { withDefaults } from '../../src/defaulting/defaults';
import { jsonPatch, type PatchOperation } from '../../src/defaulting/json-patch';
import type { PlainObject } from '../../src/defaulting/plain-object';
import { AnnotationValueError } from '../../src/defaulting/replicas-default';

/** Cluster API's defaulting webhooks as capt serves them: each kind's defaults, a field the user set kept. */

const min = 'cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size';
const max = 'cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size';
const clusterName = 'cluster.x-k8s.io/cluster-name';

const object = (kind: string, name: string, spec: PlainObject, metadata: PlainObject = {}): PlainObject => ({
  apiVersion: kind === 'KubeadmControlPlane' ? 'controlplane.cluster.x-k8s.io/v1beta2' : 'cluster.x-k8s.io/v1beta2',
  kind,
  metadata: { name, namespace: 'default', ...metadata },
  spec,
});

/** A MachineDeployment as a user may write it for Cluster API: no selector, replicas, rollout or labels. */
const bareDeployment = (metadata: PlainObject = {}, spec: PlainObject = {}) =>
  object(
    'MachineDeployment',
    'web',
    {
      clusterName: 'prod',
      template: {
        spec: {
          clusterName: 'prod',
          version: '1.36.3',
          bootstrap: {
            configRef: { apiGroup: 'bootstrap.cluster.x-k8s.io', kind: 'KubeadmConfigTemplate', name: 'w' },
          },
          infrastructureRef: { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: 'LocalMachineTemplate', name: 'w' },
        },
      },
      ...spec,
    },
    metadata,
  );

test('a MachineDeployment gets the cluster-name label, a selector of its name, one replica, RollingUpdate 1/0 and a "v"', () => {
  const md = bareDeployment();
  const before = structuredClone(md);
  const spec = withDefaults(md).spec as PlainObject;
  assert.deepEqual(md, before, 'the object given is not changed');
  assert.deepEqual(withDefaults(md).metadata, { name: 'web', namespace: 'default', labels: { [clusterName]: 'prod' } });
  assert.equal(spec.replicas, 1);
  assert.deepEqual(spec.selector, {
    matchLabels: { 'cluster.x-k8s.io/deployment-name': 'web', [clusterName]: 'prod' },
  });
  assert.deepEqual(spec.template, {
    metadata: { labels: { 'cluster.x-k8s.io/deployment-name': 'web', [clusterName]: 'prod' } },
    spec: { ...(before.spec as { template: { spec: PlainObject } }).template.spec, version: 'v1.36.3' },
  });
  assert.deepEqual(spec.rollout, {
    strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
  });
  assert.deepEqual(withDefaults(withDefaults(md)), withDefaults(md), 'defaulting twice changes nothing');
});

test("a MachineDeployment's own replicas, selector, strategy and labels are kept; the cluster-name labels follow spec.clusterName", () => {
  const md = bareDeployment(
    { labels: { team: 'a', [clusterName]: 'other' } },
    {
      replicas: 0,
      selector: { matchLabels: { pool: 'p' } },
      rollout: { strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '50%' } } },
    },
  );
  (md.spec as { template: PlainObject }).template.metadata = { labels: { pool: 'p' } };
  const defaulted = withDefaults(md);
  const spec = defaulted.spec as PlainObject;
  assert.deepEqual((defaulted.metadata as PlainObject).labels, { team: 'a', [clusterName]: 'prod' });
  assert.equal(spec.replicas, 0);
  assert.deepEqual(spec.selector, { matchLabels: { pool: 'p', [clusterName]: 'prod' } }, 'no deployment-name');
  assert.deepEqual((spec.template as PlainObject).metadata, { labels: { pool: 'p', [clusterName]: 'prod' } });
  assert.deepEqual(spec.rollout, {
    strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '50%', maxUnavailable: 0 } },
  });
  const onDelete = withDefaults(bareDeployment({}, { rollout: { strategy: { type: 'OnDelete' } } }));
  assert.deepEqual((onDelete.spec as PlainObject).rollout, { strategy: { type: 'OnDelete' } }, 'no rollingUpdate');
  const byExpression = withDefaults(
    bareDeployment({}, { selector: { matchExpressions: [{ key: 'pool', operator: 'Exists' }] } }),
  );
  assert.deepEqual((byExpression.spec as PlainObject).selector, {
    matchExpressions: [{ key: 'pool', operator: 'Exists' }],
    matchLabels: { [clusterName]: 'prod' },
  });
});

test("replicas from the autoscaler's bounds: a new object starts at the minimum, an existing one is brought within them", () => {
  const replicas = (annotations: PlainObject, old?: number) => {
    const md = bareDeployment({ annotations });
    const stored = old === undefined ? undefined : bareDeployment({ annotations }, { replicas: old });
    return (withDefaults(md, stored).spec as PlainObject).replicas;
  };
  const bounds = { [min]: '2', [max]: '5' };
  assert.equal(replicas(bounds), 2, 'created: the minimum');
  assert.equal(replicas(bounds, 1), 2, 'below the minimum: the minimum');
  assert.equal(replicas(bounds, 7), 5, 'above the maximum: the maximum');
  assert.equal(replicas(bounds, 4), 4, 'within: kept');
  assert.equal(replicas({ [min]: '2' }), 1, 'one bound alone: 1');
  assert.equal(replicas({ [min]: '+3', [max]: '05' }), 3, 'read as Go reads an int32');
  assert.throws(() => replicas({ [min]: 'two', [max]: '5' }), AnnotationValueError);
  assert.throws(() => replicas({ [min]: '2', [max]: '2147483648' }), AnnotationValueError);
  const set = object('MachineSet', 'web-abc', { clusterName: 'prod', template: {} }, { annotations: bounds });
  assert.equal((withDefaults(set).spec as PlainObject).replicas, 2, 'a MachineSet alike');
});

test('a MachineSet gets the cluster-name label, replicas and a selector of its name (hashed past 63 characters), not the cluster on its selector', () => {
  const set = (name: string) =>
    object('MachineSet', name, { clusterName: 'prod', template: { spec: { version: '1.36.3' } } });
  const short = withDefaults(set('web-md-0-abcde'));
  assert.deepEqual((short.metadata as PlainObject).labels, { [clusterName]: 'prod' });
  assert.deepEqual(short.spec, {
    clusterName: 'prod',
    replicas: 1,
    selector: { matchLabels: { 'cluster.x-k8s.io/set-name': 'web-md-0-abcde' } },
    template: { metadata: { labels: { 'cluster.x-k8s.io/set-name': 'web-md-0-abcde' } }, spec: { version: 'v1.36.3' } },
  });
  // The value Go's hash/fnv (New32a) and base64.RawURLEncoding give for 64 "a"s.
  const long = withDefaults(set('a'.repeat(64)));
  assert.deepEqual((long.spec as { selector: PlainObject }).selector, {
    matchLabels: { 'cluster.x-k8s.io/set-name': 'hash_2W8PhQ_z' },
  });
});

test("a Machine gets the cluster-name label, a 'v' and a 10 s Node deletion timeout; its own timeout is kept", () => {
  const machine = (spec: PlainObject) => object('Machine', 'm', { clusterName: 'prod', version: '1.36.3', ...spec });
  const defaulted = withDefaults(machine({}));
  assert.deepEqual((defaulted.metadata as PlainObject).labels, { [clusterName]: 'prod' });
  assert.deepEqual(defaulted.spec, {
    clusterName: 'prod',
    version: 'v1.36.3',
    deletion: { nodeDeletionTimeoutSeconds: 10 },
  });
  const own = withDefaults(
    machine({ version: 'v1.35.0', deletion: { nodeDeletionTimeoutSeconds: 0, nodeDrainTimeoutSeconds: 5 } }),
  );
  assert.deepEqual(own.spec, {
    clusterName: 'prod',
    version: 'v1.35.0',
    deletion: { nodeDeletionTimeoutSeconds: 0, nodeDrainTimeoutSeconds: 5 },
  });
});

test('a MachineHealthCheck gets the cluster-name label and a 600 s node startup timeout; its own is kept', () => {
  const mhc = (checks?: PlainObject) =>
    object('MachineHealthCheck', 'h', {
      clusterName: 'prod',
      selector: { matchLabels: { a: 'b' } },
      ...(checks && { checks }),
    });
  const defaulted = withDefaults(mhc());
  assert.deepEqual((defaulted.metadata as PlainObject).labels, { [clusterName]: 'prod' });
  assert.deepEqual(defaulted.spec, {
    clusterName: 'prod',
    selector: { matchLabels: { a: 'b' } },
    checks: { nodeStartupTimeoutSeconds: 600 },
  });
  const own = { nodeStartupTimeoutSeconds: 0, unhealthyNodeConditions: [] };
  assert.deepEqual((withDefaults(mhc(own)).spec as PlainObject).checks, own);
});

test('a KubeadmControlPlane gets one replica, a "v" and RollingUpdate with maxSurge 1; its own replicas and maxSurge are kept', () => {
  const kcp = (spec: PlainObject) => object('KubeadmControlPlane', 'cp', { version: '1.36.3', ...spec });
  assert.deepEqual(withDefaults(kcp({})).spec, {
    version: 'v1.36.3',
    replicas: 1,
    rollout: { strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1 } } },
  });
  const own = withDefaults(kcp({ replicas: 3, rollout: { after: 'x', strategy: { rollingUpdate: { maxSurge: 0 } } } }));
  assert.deepEqual(own.spec, {
    version: 'v1.36.3',
    replicas: 3,
    rollout: { after: 'x', strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 0 } } },
  });
  assert.deepEqual(
    withDefaults(kcp({})).metadata,
    { name: 'cp', namespace: 'default' },
    'no label: Cluster API sets none',
  );
});

test("a Cluster is left as it is, but for a topology's version", () => {
  const cluster = object('Cluster', 'prod', {
    paused: true,
    controlPlaneRef: { kind: 'KubeadmControlPlane', name: 'cp' },
  });
  assert.deepEqual(withDefaults(cluster), cluster);
  const topology = object('Cluster', 'prod', { topology: { classRef: { name: 'c' }, version: '1.36.3' } });
  assert.deepEqual(withDefaults(topology).spec, { topology: { classRef: { name: 'c' }, version: 'v1.36.3' } });
});

test('a field of the wrong type is left for the schema to refuse, not defaulted under', () => {
  const md = bareDeployment({}, { selector: 'all', rollout: [] });
  const spec = withDefaults(md).spec as PlainObject;
  assert.equal(spec.selector, 'all');
  assert.deepEqual(spec.rollout, []);
});

/** RFC 6902 add/replace/remove, enough to apply what the webhook answers. */
function applyPatch(target: PlainObject, ops: PatchOperation[]): PlainObject {
  const out = structuredClone(target);
  for (const op of ops) {
    const keys = op.path
      .split('/')
      .slice(1)
      .map((k) => k.replaceAll('~1', '/').replaceAll('~0', '~'));
    const last = keys.pop()!;
    const parent = keys.reduce<PlainObject>((o, k) => o[k] as PlainObject, out);
    if (op.op === 'remove') delete parent[last];
    else parent[last] = op.value;
  }
  return out;
}

test('the JSON Patch adds only what is missing, label keys escaped, and applied gives the defaulted object', () => {
  const md = bareDeployment({ labels: { team: 'a' } }, { replicas: 3 });
  const patch = jsonPatch(md, withDefaults(md));
  assert.deepEqual(applyPatch(md, patch), withDefaults(md));
  assert.deepEqual(patch[0], { op: 'add', path: '/metadata/labels/cluster.x-k8s.io~1cluster-name', value: 'prod' });
  assert.ok(!patch.some((op) => op.path.startsWith('/spec/replicas')), 'replicas kept');
  assert.deepEqual(jsonPatch(withDefaults(md), withDefaults(md)), [], 'nothing to add: no operation');
  assert.deepEqual(jsonPatch({ a: { 'x~/y': 1, b: 2 } }, { a: { 'x~/y': 2 } }), [
    { op: 'remove', path: '/a/b' },
    { op: 'replace', path: '/a/x~0~1y', value: 2 },
  ]);
});

test("the webhook leaves alone what it must: deletions, objects on their way out, the bridge's own Machines, kinds without defaults", () => {
  const request = (o: PlainObject, operation: AdmissionRequest['operation'] = 'CREATE'): AdmissionRequest => ({
    uid: 'u',
    operation,
    object: o as unknown as ApiObject,
  });
  const machine = object('Machine', 'm', { clusterName: 'prod' });
  assert.ok(defaultingPatch(request(machine)).patch.length > 0);
  assert.deepEqual(defaultingPatch(request(machine, 'DELETE')), { patch: [] });
  const made = {
    ...machine,
    metadata: { ...(machine.metadata as PlainObject), ownerReferences: [{ kind: 'MachineSet' }] },
  };
  assert.deepEqual(defaultingPatch(request(made)), { patch: [] });
  const leaving = { ...machine, metadata: { ...(machine.metadata as PlainObject), deletionTimestamp: 'now' } };
  assert.deepEqual(defaultingPatch(request(leaving, 'UPDATE')), { patch: [] });
  assert.deepEqual(defaultingPatch(request({ ...machine, kind: 'KubeadmConfigTemplate' })), { patch: [] });
  const refused = defaultingPatch(request(bareDeployment({ annotations: { [min]: 'x', [max]: '3' } })));
  assert.match(
    refused.refusal!,
    /^MachineDeployment default\/web at metadata\.annotations\[cluster\.x-k8s\.io\/cluster-api-autoscaler-node-group-min-size\]: "x" is not a whole number/,
  );
});

test('the MutatingWebhookConfiguration: the kinds with defaults, create and update, Ignore, IfNeeded, no side effects', () => {
  const config = defaultingConfiguration('https://127.0.0.1:9443/mutate', 'PEM') as { webhooks: PlainObject[] };
  const [webhook] = config.webhooks;
  type Rule = { apiGroups: string[]; apiVersions: string[]; operations: string[]; resources: string[]; scope: string };
  const rules = webhook!.rules as Rule[];
  assert.deepEqual(
    rules.map((r) => [r.apiGroups, r.resources]),
    [
      [['cluster.x-k8s.io'], ['clusters', 'machinedeployments', 'machinesets', 'machines', 'machinehealthchecks']],
      [['controlplane.cluster.x-k8s.io'], ['kubeadmcontrolplanes']],
    ],
  );
  for (const r of rules)
    assert.deepEqual([r.apiVersions, r.operations, r.scope], [['v1beta2'], ['CREATE', 'UPDATE'], 'Namespaced']);
  assert.equal(webhook!.failurePolicy, 'Ignore');
  assert.equal(webhook!.reinvocationPolicy, 'IfNeeded');
  assert.equal(webhook!.sideEffects, 'None');
  assert.equal(webhook!.matchPolicy, 'Equivalent');
  assert.deepEqual(webhook!.clientConfig, {
    url: 'https://127.0.0.1:9443/mutate',
    caBundle: Buffer.from('PEM').toString('base64'),
  });
});

test("the bridge's loader reads a cluster the same with or without the defaults (objects made before the webhook)", () => {
  const { text } = substituteVariables(readFileSync(join(__dirname, '../../../examples/quickstart.yaml'), 'utf8'), {
    CLUSTER_NAME: 'one',
  });
  const bare = parseAllDocuments(text).map((d) => d.toJSON() as PlainObject);
  for (const o of bare) {
    const spec = o.spec as PlainObject;
    if (o.kind === 'MachineDeployment') {
      for (const key of ['selector', 'replicas', 'rollout']) delete spec[key];
      delete (spec.template as PlainObject).metadata;
    }
    if (o.kind === 'KubeadmControlPlane') for (const key of ['replicas', 'rollout']) delete spec[key];
  }
  bare.push(
    object('MachineHealthCheck', 'one-md-0', {
      clusterName: 'one',
      selector: { matchLabels: { 'cluster.x-k8s.io/deployment-name': 'one-md-0' } },
    }),
  );
  const load = (docs: PlainObject[]) =>
    loadManifests([{ file: 'x', text: docs.map((d) => stringify(d)).join('---\n') }], {})[0]!;
  const without = load(bare);
  const defaulted = load(bare.map((o) => withDefaults(o)));
  // The template's labels gain the two a MachineDeployment's machines carry anyway, with the same values.
  const [md, mdDefaulted] = [without.machineDeployments[0]!, defaulted.machineDeployments[0]!];
  assert.deepEqual(
    machineDeploymentMachineLabels('one', 'one-md-0', mdDefaulted.template.labels),
    machineDeploymentMachineLabels('one', 'one-md-0', md.template.labels),
  );
  mdDefaulted.template.labels = md.template.labels;
  assert.deepEqual(defaulted, without);
});
