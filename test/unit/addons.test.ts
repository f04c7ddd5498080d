import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadManifests, loadManifestsWithTopologies } from '../../src/api/load-manifests';
import { ManifestError } from '../../src/api/manifest-error';
import { clusterApiE2eData } from '../../src/tools';
import { selectorMatches, selectorText } from '../../src/contract/label-selector';
import type { AddonResource, CandidateCluster, ResourceSetModel } from '../../src/contract/resource-set';
import { bound, dueResources, liveBindings, resourcesApplied } from '../../workflows/addons/resource-set-bindings';

const crs = (spec: string, apiVersion = 'addons.cluster.x-k8s.io/v1beta2') => `apiVersion: ${apiVersion}
kind: ClusterResourceSet
metadata: {name: cni, namespace: team-a}
spec:
${spec}`;
const cm = `apiVersion: v1
kind: ConfigMap
metadata: {name: cni-manifests, namespace: team-a}
data:
  b.yaml: |
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web, namespace: addons}
    spec: {replicas: 1}
    ---
    apiVersion: v1
    kind: Namespace
    metadata: {name: addons}
  a.json: '[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":"addons"},"data":{"k":"v"}}]'
`;
const load = (...docs: string[]) =>
  loadManifestsWithTopologies([{ file: 'addons.yaml', text: docs.join('\n---\n') }], {}).addons;
const problemsOf = (...docs: string[]) => {
  try {
    load(...docs);
  } catch (err) {
    assert.ok(err instanceof ManifestError, String(err));
    return err.problems;
  }
  assert.fail('expected a ManifestError');
};
const spec = `  clusterSelector: {matchLabels: {cni: calico}}
  resources: [{name: cni-manifests, kind: ConfigMap}]`;

test('a ClusterResourceSet and its ConfigMap load: strategy ApplyOnce by default, objects by key then Cluster API create order, its hash', () => {
  const { resourceSets, resources } = load(crs(spec), cm);
  assert.deepEqual(resourceSets, [
    {
      namespace: 'team-a',
      name: 'cni',
      selector: { matchLabels: { cni: 'calico' } },
      strategy: 'ApplyOnce',
      resources: [{ kind: 'ConfigMap', name: 'cni-manifests' }],
    },
  ]);
  const r = resources[0]!;
  // Keys sorted (a.json before b.yaml); within b.yaml the Namespace moves before the Deployment.
  assert.deepEqual(
    r.objects.map((o) => `${o.kind}/${o.metadata.name}`),
    ['ConfigMap/settings', 'Namespace/addons', 'Deployment/web'],
  );
  const a =
    '[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":"addons"},"data":{"k":"v"}}]';
  const b =
    'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: addons}\nspec: {replicas: 1}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: addons}\n';
  assert.equal(r.hash, `sha256:${createHash('sha256').update(a).update(b).digest('hex')}`);
  // The same set in v1beta1 is the same model.
  assert.deepEqual(load(crs(spec, 'addons.cluster.x-k8s.io/v1beta1'), cm).resourceSets, resourceSets);
});

test('a Secret of the resource-set type is decoded, stringData over data; its hash is of the decoded values', () => {
  const manifest = 'apiVersion: v1\nkind: Namespace\nmetadata: {name: from-secret}\n';
  const secret = `apiVersion: v1
kind: Secret
metadata: {name: s, namespace: team-a}
type: addons.cluster.x-k8s.io/resource-set
data: {ns.yaml: ${Buffer.from(manifest).toString('base64')}}`;
  const set = crs(`  clusterSelector: {matchLabels: {a: b}}
  strategy: Reconcile
  resources: [{name: s, kind: Secret}]`);
  const r = load(set, secret).resources[0]!;
  assert.deepEqual(r.objects, [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'from-secret' } }]);
  assert.equal(r.hash, `sha256:${createHash('sha256').update(manifest).digest('hex')}`);
  assert.equal(load(set, secret).resourceSets[0]!.strategy, 'Reconcile');
});

test('bad addons are refused at their field, with what to do, and nothing is loaded', () => {
  const cases: [string[], RegExp, string?][] = [
    [[crs('  clusterSelector: {}\n  resources: [{name: x, kind: ConfigMap}]')], /selector must not be empty/],
    [
      [
        crs(spec).replace(
          'metadata: {name: cni, namespace: team-a}',
          'metadata: {name: cni, namespace: team-a, annotations: {cluster.x-k8s.io/paused: ""}}',
        ),
      ],
      /capt does not pause a ClusterResourceSet/,
      'metadata.annotations.cluster.x-k8s.io/paused',
    ],
    [[crs('  clusterSelector: {matchLabels: {a: b}}\n  resources: []')], /Too small|at least|>=1/i, 'spec.resources'],
    [[crs('  clusterSelector: {matchLabels: {a: b}}\n  resources: [{name: x, kind: Deployment}]')], /ConfigMap|Secret/],
    [
      [
        crs(
          '  clusterSelector: {matchLabels: {a: b}}\n  strategy: Sometimes\n  resources: [{name: x, kind: ConfigMap}]',
        ),
      ],
      /ApplyOnce|Reconcile/,
    ],
    [
      [
        crs(
          '  clusterSelector: {matchExpressions: [{key: a, operator: In}]}\n  resources: [{name: x, kind: ConfigMap}]',
        ),
      ],
      /operator In needs values/,
    ],
    [
      [
        crs(
          `  clusterSelector: {matchLabels: {a: b}}\n  resources: [{name: x, kind: ConfigMap}, {name: x, kind: ConfigMap}]`,
        ),
      ],
      /ConfigMap\/x is named twice/,
    ],
    [
      [`apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {a: YQ==}`],
      /must have type addons.cluster.x-k8s.io\/resource-set/,
    ],
    [
      [`apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\nbinaryData: {a: YQ==}\ndata: {}`],
      /binaryData is never applied/,
    ],
    [
      [`apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: "kind: Namespace\\nmetadata: {name: x}"}`],
      /apiVersion is missing/,
      'data.a[0].apiVersion',
    ],
    [
      [
        `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: "apiVersion: v1\\nkind: Pod\\nmetadata: {name: ../../x}"}`,
      ],
      /not a Kubernetes name/,
    ],
    [[`apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: "[{broken"}`], /not a JSON list/],
    [[`apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: "a: [b"}`], /not valid YAML/],
    [
      [`apiVersion: addons.cluster.x-k8s.io/v1alpha3\nkind: ClusterResourceSet\nmetadata: {name: c}\nspec: {}`],
      /use apiVersion: addons.cluster.x-k8s.io\/v1beta2/,
    ],
  ];
  for (const [docs, message, path] of cases) {
    const problems = problemsOf(...docs);
    assert.ok(
      problems.some((p) => message.test(`${p.message} ${p.hint ?? ''}`) && (!path || p.path === path)),
      `${docs.join('---')}\n=> ${JSON.stringify(problems)}`,
    );
  }
});

test('loadManifests, which takes clusters only, refuses addons rather than dropping them', () => {
  assert.throws(
    () => loadManifests([{ file: 'a.yaml', text: cm }], {}),
    /ClusterResourceSets and the ConfigMaps and Secrets they apply are not taken here.*capt apply/s,
  );
});

test('label selectors: matchLabels and every operator; an empty selector matches nothing', () => {
  const labels = { env: 'prod', cni: 'calico' };
  assert.equal(selectorMatches({ matchLabels: { env: 'prod' } }, labels), true);
  assert.equal(selectorMatches({ matchLabels: { env: 'dev' } }, labels), false);
  assert.equal(
    selectorMatches({ matchExpressions: [{ key: 'env', operator: 'In', values: ['dev', 'prod'] }] }, labels),
    true,
  );
  assert.equal(
    selectorMatches({ matchExpressions: [{ key: 'env', operator: 'NotIn', values: ['prod'] }] }, labels),
    false,
  );
  assert.equal(selectorMatches({ matchExpressions: [{ key: 'gpu', operator: 'NotIn', values: ['x'] }] }, labels), true);
  assert.equal(selectorMatches({ matchExpressions: [{ key: 'cni', operator: 'Exists' }] }, labels), true);
  assert.equal(selectorMatches({ matchExpressions: [{ key: 'cni', operator: 'DoesNotExist' }] }, labels), false);
  assert.equal(selectorMatches({}, labels), false);
  assert.equal(
    selectorText({
      matchLabels: { a: 'b' },
      matchExpressions: [
        { key: 'c', operator: 'In', values: ['d', 'e'] },
        { key: 'f', operator: 'DoesNotExist' },
      ],
    }),
    'a=b,c in (d,e),!f',
  );
});

const set = (strategy: ResourceSetModel['strategy']): ResourceSetModel => ({
  namespace: 'ns',
  name: 'cni',
  selector: { matchLabels: { a: 'b' } },
  strategy,
  resources: [
    { kind: 'ConfigMap', name: 'one' },
    { kind: 'Secret', name: 'two' },
  ],
});
const resource = (name: string, hash: string, kind: AddonResource['kind'] = 'ConfigMap'): AddonResource => ({
  kind,
  name,
  hash,
  objects: [],
});
const cluster = (name: string, createdAt = 't0', initialized = true): CandidateCluster => ({
  name,
  createdAt,
  labels: { a: 'b' },
  initialized,
  deleting: false,
});

test('what a cluster is due: ApplyOnce applies what was never applied, Reconcile also what changed; in the set order', () => {
  const held = [resource('two', 'h2', 'Secret'), resource('one', 'h1')];
  for (const strategy of ['ApplyOnce', 'Reconcile'] as const)
    assert.deepEqual(
      dueResources(set(strategy), held, undefined).map((r) => r.name),
      ['one', 'two'],
    );
  const c = cluster('c1');
  let b = bound(c, undefined, [{ kind: 'ConfigMap', name: 'one', hash: 'h1', applied: true }], 'now');
  b = bound(c, b, [{ kind: 'Secret', name: 'two', hash: 'h2', applied: false, message: 'refused' }], 'later');
  assert.deepEqual(
    b.resources.map((r) => [r.name, r.applied, r.lastAppliedTime]),
    [
      ['one', true, 'now'],
      ['two', false, 'later'],
    ],
  );
  // A failed one is due again under both strategies.
  assert.deepEqual(
    dueResources(set('ApplyOnce'), held, b).map((r) => r.name),
    ['two'],
  );
  const changed = [resource('one', 'h1-new'), resource('two', 'h2', 'Secret')];
  assert.deepEqual(
    dueResources(set('ApplyOnce'), changed, b).map((r) => r.name),
    ['two'],
  );
  assert.deepEqual(
    dueResources(set('Reconcile'), changed, b).map((r) => r.name),
    ['one', 'two'],
  );
});

test('bindings last while their cluster does; a cluster made again under its name starts afresh', () => {
  const b = bound(cluster('c1'), undefined, [{ kind: 'ConfigMap', name: 'one', hash: 'h1', applied: true }], 'now');
  assert.equal(liveBindings([b], [cluster('c1')]).length, 1);
  assert.equal(liveBindings([b], [cluster('c1', 't1')]).length, 0);
  assert.equal(liveBindings([b], []).length, 0);
});

test("ResourcesApplied: none while nothing matches, False with each cluster's reason, True once all are applied", () => {
  const s = set('ApplyOnce');
  const held = [resource('one', 'h1'), resource('two', 'h2', 'Secret')];
  assert.deepEqual(resourcesApplied(s, held, [], []), []);
  const c1 = cluster('c1');
  const all = bound(
    c1,
    undefined,
    [
      { kind: 'ConfigMap', name: 'one', hash: 'h1', applied: true },
      { kind: 'Secret', name: 'two', hash: 'h2', applied: true },
    ],
    'now',
  );
  assert.deepEqual(resourcesApplied(s, held, [c1], [all]), [
    { type: 'ResourcesApplied', status: 'True', reason: 'Applied' },
  ]);
  const failed = bound(
    c1,
    all,
    [{ kind: 'Secret', name: 'two', hash: 'h2', applied: false, message: 'Deployment x: forbidden' }],
    'now',
  );
  const [condition] = resourcesApplied(s, held, [c1, cluster('c2', 't0', false)], [failed]);
  assert.equal(condition!.status, 'False');
  assert.equal(condition!.reason, 'NotApplied');
  assert.match(
    condition!.message!,
    /cluster c1: Secret\/two: Deployment x: forbidden; cluster c2: waiting for its control plane/,
  );
});

test("Cluster API's own e2e ClusterResourceSet (its CNI piece, read from its module at setup) loads as published, and selects its e2e Cluster", () => {
  const text = readFileSync(join(clusterApiE2eData(), 'infrastructure-docker/main/bases/crs.yaml'), 'utf8');
  const cni = 'apiVersion: v1\nkind: Namespace\nmetadata: {name: cni}\n';
  const { resourceSets, resources } = loadManifestsWithTopologies([{ file: 'crs.yaml', text }], {
    CLUSTER_NAME: 'capi-e2e',
    CNI_RESOURCES: JSON.stringify({ 'cni.yaml': cni }),
  }).addons;
  assert.deepEqual(resourceSets, [
    {
      namespace: 'default',
      name: 'capi-e2e-crs-0',
      selector: { matchLabels: { cni: 'capi-e2e-crs-0' } },
      strategy: 'ApplyOnce',
      resources: [{ kind: 'ConfigMap', name: 'cni-capi-e2e-crs-0' }],
    },
  ]);
  assert.deepEqual(resources[0]!.objects, [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'cni' } }]);
  // The e2e Cluster carries the label the set selects.
  const cluster = readFileSync(join(__dirname, '../../../test/api/manifests/capi-v1.14-cluster-with-kcp.yaml'), 'utf8');
  const [labelled] = loadManifests([{ file: 'cluster-with-kcp.yaml', text: cluster }], {});
  assert.equal(selectorMatches(resourceSets[0]!.selector, labelled!.labels), true);
});
