import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { promisify } from 'node:util';
import { kubectlFor, availableKubernetesVersions } from '../../src/tools';
import { runCapt } from '../fixtures/capt-cli';
import { clusterKubeconfig } from '../fixtures/cluster-secrets';
import { harnessWithClient } from '../fixtures/machine-harness';
import { until } from '../fixtures/until';

const run = promisify(execFile);
const suite = harnessWithClient();
const h = suite.harness;
const capt = (...args: string[]) => runCapt({ TEMPORAL_ADDRESS: h.env.address, CAPT_HOME: h.home }, ...args);
const ok = async (...args: string[]) => {
  const r = await capt(...args);
  assert.equal(r.code, 0, `capt ${args.join(' ')}: ${r.stderr}${r.stdout}`);
  return r.stdout;
};
const refused = async (...args: string[]) => {
  const r = await capt(...args);
  assert.equal(r.code, 2, `capt ${args.join(' ')} should be refused: ${r.stdout}`);
  return r.stderr;
};

let dir: string | undefined;
const file = async (name: string, text: string) => {
  dir ??= await mkdtemp(join(tmpdir(), 'capt-crs-'));
  await writeFile(join(dir, name), text);
  return join(dir, name);
};
// It holds the clusters' admin kubeconfigs: nothing of it outlives the test.
after(() => (dir ? rm(dir, { recursive: true, force: true }) : undefined));

/** The quickstart cluster NAME (one control-plane machine, no workers), labelled `cni: calico`. */
async function labelledCluster(name: string): Promise<string> {
  const text = await readFile(join(__dirname, '../../../examples/quickstart.yaml'), 'utf8');
  const labelled = text.replace(
    /(kind: Cluster\nmetadata:\n {2}name: \$\{CLUSTER_NAME:=quickstart\}\n {2}namespace: default\n)/,
    '$1  labels: {cni: calico}\n',
  );
  assert.notEqual(labelled, text, 'the quickstart Cluster took the label');
  return file(`${name}.yaml`, labelled);
}
const clusterVars = (name: string) => [
  '--var',
  `CLUSTER_NAME=${name}`,
  '--var',
  'CONTROL_PLANE_MACHINE_COUNT=1',
  '--var',
  'WORKER_MACHINE_COUNT=0',
];

/** The object both kinds of resource hold: a ConfigMap in the workload cluster, its `setting` at `value`. */
const settingObject = (name: string, value: string) => `
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: ${name}, namespace: addons}
    data: {setting: ${value}}`;
const configMap = (name: string, value: string) => `apiVersion: v1
kind: ConfigMap
metadata: {name: ${name}-manifests}
data:
  objects.yaml: |${settingObject(name, value)}
    ---
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: ${name}-web, namespace: addons}
    spec:
      replicas: 1
      selector: {matchLabels: {app: ${name}-web}}
      template:
        metadata: {labels: {app: ${name}-web}}
        spec: {containers: [{name: web, image: registry.example/web:1}]}
    ---
    apiVersion: v1
    kind: Namespace
    metadata: {name: addons}
`;
const secret = (name: string, value: string) => `apiVersion: v1
kind: Secret
metadata: {name: ${name}-manifests}
type: addons.cluster.x-k8s.io/resource-set
stringData:
  objects.yaml: |${settingObject(name, value)}
`;
const resourceSet = (
  name: string,
  strategy: string,
  kind: string,
  selector = 'matchLabels: {cni: calico}',
) => `apiVersion: addons.cluster.x-k8s.io/v1beta2
kind: ClusterResourceSet
metadata: {name: ${name}}
spec:
  clusterSelector: {${selector}}
  strategy: ${strategy}
  resources: [{name: ${name}-manifests, kind: ${kind}}]
`;

/** kubectl on a workload cluster, as its admin. */
async function kubectl(cluster: string, ...args: string[]): Promise<string> {
  const kubeconfig = await file(
    `${cluster}.kubeconfig`,
    await clusterKubeconfig(suite.client.client, 'default', cluster),
  );
  const version = availableKubernetesVersions().at(-1)!;
  return (await run(kubectlFor(version), ['--kubeconfig', kubeconfig, ...args])).stdout;
}
/** The set `once` (ApplyOnce, a ConfigMap) and the set `recon` (Reconcile, a Secret), their objects' setting at `value`. */
const bothSets = (value: string) =>
  file(
    `sets-${value}.yaml`,
    [
      resourceSet('once', 'ApplyOnce', 'ConfigMap'),
      configMap('once', value),
      resourceSet('recon', 'Reconcile', 'Secret'),
      secret('recon', value),
    ].join('---\n'),
  );
const setting = (cluster: string, name: string) =>
  kubectl(cluster, 'get', 'configmap', name, '-n', 'addons', '-o', 'jsonpath={.data.setting}').catch(() => '');

/** Until `cluster` has both sets' objects at `value` (its control plane may still be booting). */
const bothApplied = (cluster: string, value: string) =>
  until(
    `${cluster} to get both sets at ${value}`,
    async () => (await setting(cluster, 'once')) === value && (await setting(cluster, 'recon')) === value,
    { timeoutMs: 600_000, intervalMs: 2000 },
  );

test('ClusterResourceSets: ApplyOnce and Reconcile to every matching cluster, with a dry run, bindings, refusals and deletion', async () => {
  const sets = await bothSets('v1');
  // Before any cluster: the dry run says nothing matches, and changes nothing.
  const before = await ok('apply', '-f', sets, '--dry-run');
  assert.match(
    before,
    /^clusterresourceset\.addons\.cluster\.x-k8s\.io\/once created \(dry run\)\n {2}no cluster of namespace default matches cni=calico$/m,
  );
  assert.match(
    await ok('get', 'clusterresourcesets'),
    /^NAMESPACE\s+NAME\s+STRATEGY\s+SELECTOR\s+APPLIED\s+BOUND\s+WAITING\s*$/,
  );

  // A labelled cluster and the sets: once its control plane is up, it gets every object, Namespace first.
  const a1 = await labelledCluster('a1');
  const applied = await ok('apply', '-f', a1, '-f', sets, ...clusterVars('a1'));
  assert.match(applied, /^clusterresourceset\.addons\.cluster\.x-k8s\.io\/once created$/m);
  assert.match(applied, /^configmap\/once-manifests created$/m);
  assert.match(applied, /^secret\/recon-manifests created$/m);
  assert.equal((await suite.client.waitForCluster('default', 'a1', () => undefined, 600_000)).phase, 'Provisioned');
  await bothApplied('a1', 'v1');
  assert.match(
    await kubectl('a1', 'get', 'deployment', 'once-web', '-n', 'addons', '-o', 'name'),
    /deployment.apps\/once-web/,
  );
  const listed = await until(
    'both sets to show Applied',
    async () => {
      const out = await ok('get', 'crs');
      return (
        /^default\s+once\s+ApplyOnce\s+cni=calico\s+True\s+1\s+0$/m.test(out) &&
        /^default\s+recon\s+Reconcile\s+cni=calico\s+True\s+1\s+0$/m.test(out) &&
        out
      );
    },
    { timeoutMs: 120_000 },
  );
  console.log(listed);
  const described = await ok('describe', 'clusterresourceset', 'recon');
  assert.match(described, /Secret\/recon-manifests: 1 objects, sha256:[0-9a-f]{64}/);
  assert.match(described, /ResourcesApplied: True Applied/);
  assert.match(described, /cluster a1:\n {6}Secret\/recon-manifests: applied \d+s ago, sha256:[0-9a-f]{64}/);

  // Changed content: the dry run says Reconcile would apply it again and ApplyOnce would not; then it is so.
  const changed = await bothSets('v2');
  const dry = await ok('apply', '-f', changed, '--dry-run');
  console.log(dry);
  assert.match(
    dry,
    /^ {2}cluster a1: nothing to apply; ConfigMap\/once-manifests changed since applied, and ApplyOnce does not apply again$/m,
  );
  assert.match(
    dry,
    /^ {2}cluster a1 would get Secret\/recon-manifests \(changed since applied: ConfigMap addons\/recon\)$/m,
  );
  assert.equal(await setting('a1', 'recon'), 'v1', 'a dry run changes nothing');
  // The Secret alone reaches the set that names it.
  const alone = await ok('apply', '-f', await file('recon-secret.yaml', secret('recon', 'v2')));
  assert.match(alone, /^secret\/recon-manifests configured$/m);
  await until('Reconcile to apply the new content', async () => (await setting('a1', 'recon')) === 'v2', {
    timeoutMs: 120_000,
  });
  await ok('apply', '-f', await file('once-cm.yaml', configMap('once', 'v2')));
  await until(
    'the ApplyOnce set to have seen its change',
    async () => {
      const d = await ok('describe', 'clusterresourceset', 'once');
      const [, gen, observed] = /generation (\d+), observed (\d+)/.exec(d)!;
      return gen === observed && Number(gen) > 1;
    },
    { timeoutMs: 120_000 },
  );
  assert.equal(await setting('a1', 'once'), 'v1', 'ApplyOnce does not apply a changed resource again');

  // Refused, each with what to do, and nothing changes.
  assert.match(
    await refused(
      'apply',
      '-f',
      await file('other-selector.yaml', resourceSet('once', 'ApplyOnce', 'ConfigMap', 'matchLabels: {cni: cilium}')),
    ),
    /ClusterResourceSet default\/once: spec\.clusterSelector: field is immutable \(it is cni=calico\); delete the set/,
  );
  assert.match(
    await refused('apply', '-f', await file('strategy.yaml', resourceSet('once', 'Reconcile', 'ConfigMap'))),
    /spec\.strategy: field is immutable \(it is ApplyOnce\)/,
  );
  assert.match(
    await refused('apply', '-f', await file('missing.yaml', resourceSet('lonely', 'ApplyOnce', 'ConfigMap'))),
    /ClusterResourceSet default\/lonely: spec\.resources names ConfigMap lonely-manifests, which this apply does not hold and capt was never given; apply it with the set/,
  );
  assert.match(
    await refused('apply', '-f', await file('stray.yaml', configMap('stray', 'v1'))),
    /ConfigMap default\/stray-manifests: no ClusterResourceSet names it; apply it with the ClusterResourceSet/,
  );
  assert.doesNotMatch(await ok('get', 'crs'), /lonely/);

  // An object the cluster cannot take: the set says which, and the rest of the cluster's objects stay.
  const widget = `apiVersion: v1
kind: ConfigMap
metadata: {name: widgets-manifests}
data:
  w.yaml: |
    apiVersion: example.com/v1
    kind: Widget
    metadata: {name: w1, namespace: addons}
`;
  await ok(
    'apply',
    '-f',
    await file('widgets.yaml', [resourceSet('widgets', 'ApplyOnce', 'ConfigMap'), widget].join('---\n')),
  );
  const failed = await until(
    'the widgets set to say why it is not applied',
    async () => {
      const d = await ok('describe', 'clusterresourceset', 'widgets');
      return (
        /ResourcesApplied: False NotApplied: cluster a1: ConfigMap\/widgets-manifests: Widget addons\/w1: the cluster serves no Widget in example.com\/v1 \(HTTP 404\)/.test(
          d,
        ) && d
      );
    },
    { timeoutMs: 120_000 },
  );
  console.log(failed);
  assert.match(failed, /ConfigMap\/widgets-manifests: NOT applied/);

  // A second labelled cluster gets what the sets hold now: the Reconcile set's new content, and the ApplyOnce set's too.
  await ok('apply', '-f', await labelledCluster('b1'), ...clusterVars('b1'));
  await bothApplied('b1', 'v2');
  assert.match(
    await ok('describe', 'clusterresourceset', 'recon'),
    /cluster b1:\n {6}Secret\/recon-manifests: applied/,
  );

  // Deleted: the set is gone; what it applied stays, as Cluster API leaves it.
  assert.match(
    await ok('delete', 'clusterresourceset', 'recon'),
    /clusterresourceset.addons.cluster.x-k8s.io\/recon deleted \(what it applied stays in the clusters\)/,
  );
  await until('recon to leave the list', async () => !/\brecon\b/.test(await ok('get', 'crs')), { timeoutMs: 60_000 });
  assert.equal(await setting('a1', 'recon'), 'v2');
  assert.match(
    (await capt('describe', 'clusterresourceset', 'recon')).stderr,
    /clusterresourceset default\/recon not found/,
  );
});
