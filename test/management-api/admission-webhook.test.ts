import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { substituteVariables } from '../../src/api/variables';
import { appliedManifestAnnotation } from '../../src/bridge/bridge';
import { createCertificateAuthority, issueCertificate } from '../../src/pki/certificates';
import { webhookConfigurationName, webhookName } from '../../src/bridge/webhook-registration';
import { availableKubernetesVersions, kubectlFor } from '../../src/tools';
import { runProgram } from '../fixtures/capt-cli';
import { startDevStack, type DevStackUnderTest } from '../fixtures/dev-stack';
import { listening, processesMentioning } from '../fixtures/leaks';
import { until } from '../fixtures/until';
import { postToWebhook } from '../fixtures/webhook-post';

/**
 * capt's validating admission webhook, as `capt dev start` serves and registers it (in the bridge): kubectl
 * apply of an object capt refuses, or of a change a running cluster refuses, fails at once with `capt
 * apply`'s message, and nothing of it is stored. The clusters are paused (no machine is made), all but the one a
 * ClusterResourceSet applied with kubectl is carried out on.
 */

const [older, version] = availableKubernetesVersions().slice(-2) as [string, string];
const denied = `admission webhook "${webhookName}" denied the request: `;
let stack: DevStackUnderTest;

const capt = (...args: string[]) => stack.capt(...args);
const kube = (input: string | undefined, ...args: string[]) => stack.kubectl(input, ...args);

/** The quickstart, paused (nothing is made), with `edit` applied to its text. */
async function manifest(name: string, edit: (text: string) => string = (t) => t): Promise<string> {
  const text = substituteVariables(await readFile(join(__dirname, '../../../examples/quickstart.yaml'), 'utf8'), {
    CLUSTER_NAME: name,
    KUBERNETES_VERSION: version,
  }).text.replace(/^spec:\n {2}clusterNetwork:/m, 'spec:\n  paused: true\n  clusterNetwork:');
  return edit(text);
}

/** The Cluster, its LocalCluster, control plane and that one's template: the documents before the first MachineDeployment. */
const withoutWorkers = (text: string) =>
  text.split(/^---\napiVersion: cluster\.x-k8s\.io\/v1beta2\nkind: MachineDeployment/m)[0]!;

before(async () => {
  stack = await startDevStack();
  console.log(`# capt dev start (with the bridge's admission webhook registered): ${stack.started.ms} ms`);
});

after(() => stack.remove());

test("kubectl apply of an object capt refuses fails at once with capt's located message, and the object is not stored", async () => {
  const users = await manifest('refused', (text) =>
    text.replace(/^ {2}kubeadmConfigSpec:\n/m, '  kubeadmConfigSpec:\n    users:\n      - name: admin\n'),
  );
  const started = Date.now();
  const applied = await kube(users, 'apply', '-f', '-');
  console.log(`# kubectl apply of the quickstart's 8 documents, each reviewed: ${Date.now() - started} ms`);
  assert.notEqual(applied.code, 0);
  assert.match(applied.stdout, /^cluster\.cluster\.x-k8s\.io\/refused created$/m, 'the Cluster waits for its objects');
  assert.ok(
    applied.stderr.includes(
      `The request is invalid: error when creating "STDIN": ${denied}management API, Cluster default/refused (document 3) KubeadmControlPlane/refused-control-plane at spec.kubeadmConfigSpec.users: users are not created by capt's providers: create them in preKubeadmCommands (useradd) or remove the field\n`,
    ),
    applied.stderr,
  );
  const got = await kube(undefined, 'get', 'kubeadmcontrolplane', 'refused-control-plane');
  assert.notEqual(got.code, 0);
  assert.match(got.stderr, /kubeadmcontrolplanes\.controlplane\.cluster\.x-k8s\.io "refused-control-plane" not found/);
});

test("a ClusterResourceSet applied with kubectl reaches its workflow: its ConfigMap's objects reach the matching cluster (again when they change), its status and ClusterResourceSetBinding are written, a bad or immutable change is refused, and kubectl delete ends it", async () => {
  const labelled = (await stack.generateCluster('addons', version, 0)).replace(
    /(kind: Cluster\nmetadata:\n)/,
    '$1  labels:\n    cni: calico\n',
  );
  await stack.applyAndWait(labelled, 'addons');
  const set = (selector: string) => `apiVersion: addons.cluster.x-k8s.io/v1beta2
kind: ClusterResourceSet
metadata: {name: cni, namespace: default}
spec:
  clusterSelector: ${selector}
  strategy: Reconcile
  resources: [{name: cni-manifests, kind: ConfigMap}]
`;
  const empty = await kube(set('{}'), 'apply', '-f', '-');
  assert.notEqual(empty.code, 0);
  assert.match(empty.stderr, /ClusterResourceSet\/cni at spec\.clusterSelector: selector must not be empty/);
  const data = `apiVersion: v1
kind: ConfigMap
metadata: {name: cni-manifests, namespace: default}
data:
  objects.yaml: |
    apiVersion: v1
    kind: Namespace
    metadata: {name: cni-system}
    ---
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: cni-config, namespace: cni-system}
    data: {mtu: "1450"}
`;
  const applied = await kube(`${set('{matchLabels: {cni: calico}}')}---\n${data}`, 'apply', '-f', '-');
  assert.equal(applied.code, 0, applied.stderr);

  // The objects reach the workload cluster; the set's condition and the cluster's binding say so.
  const kubeconfig = join(stack.home, 'addons.kubeconfig');
  await writeFile(kubeconfig, (await capt('kubeconfig', 'addons')).stdout, { mode: 0o600 });
  const workload = (...args: string[]) => runProgram(kubectlFor(version), ['--kubeconfig', kubeconfig, ...args]);
  await until("the ConfigMap's objects in the workload cluster", async () => {
    const got = await workload('get', 'configmap', 'cni-config', '-n', 'cni-system', '-o', 'jsonpath={.data.mtu}');
    return got.code === 0 && got.stdout === '1450';
  });
  const object = await until("the set's status", async () => {
    const got = JSON.parse((await kube(undefined, 'get', 'clusterresourceset', 'cni', '-o', 'json')).stdout);
    return got.status?.observedGeneration === 1 &&
      got.status.conditions?.some(
        (c: { type: string; status: string }) => c.type === 'ResourcesApplied' && c.status === 'True',
      )
      ? got
      : undefined;
  });
  assert.deepEqual(object.metadata.finalizers, ['addons.cluster.x-k8s.io']);
  const binding = await until("the cluster's ClusterResourceSetBinding", async () => {
    const got = await kube(undefined, 'get', 'clusterresourcesetbinding', 'addons', '-o', 'json');
    return got.code === 0 ? JSON.parse(got.stdout) : undefined;
  });
  assert.equal(binding.spec.clusterName, 'addons');
  assert.equal(binding.spec.bindings[0].clusterResourceSetName, 'cni');
  assert.deepEqual(
    binding.spec.bindings[0].resources.map((r: { kind: string; name: string; applied: boolean; hash: string }) => [
      r.kind,
      r.name,
      r.applied,
      /^sha256:[0-9a-f]{64}$/.test(r.hash),
    ]),
    [['ConfigMap', 'cni-manifests', true, true]],
  );

  // Reconcile: a change to the ConfigMap's data reaches the cluster again.
  const changed = await kube(data.replace('mtu: "1450"', 'mtu: "9000"'), 'apply', '-f', '-');
  assert.equal(changed.code, 0, changed.stderr);
  await until('the changed ConfigMap in the workload cluster', async () => {
    const got = await workload('get', 'configmap', 'cni-config', '-n', 'cni-system', '-o', 'jsonpath={.data.mtu}');
    return got.code === 0 && got.stdout === '9000';
  });

  // Cluster API's immutable selector: refused at once, the stored set unchanged.
  const moved = await kube(
    undefined,
    'patch',
    'clusterresourceset/cni',
    '--type=merge',
    '-p',
    JSON.stringify({ spec: { clusterSelector: { matchLabels: { cni: 'cilium' } } } }),
  );
  assert.notEqual(moved.code, 0);
  assert.match(moved.stderr, /ClusterResourceSet default\/cni: spec\.clusterSelector: field is immutable/);

  // kubectl delete ends the set's workflow; the object and its binding go.
  const deleted = await kube(undefined, 'delete', 'clusterresourceset', 'cni', '--wait', '--timeout', '60s');
  assert.equal(deleted.code, 0, deleted.stderr);
  const listed = await capt('get', 'clusterresourcesets', '-A');
  assert.doesNotMatch(listed.stdout, /\bcni\b/, listed.stdout);
  await until(
    'the binding gone',
    async () => (await kube(undefined, 'get', 'clusterresourcesetbindings', '-o', 'name')).stdout.trim() === '',
  );
  const gone = await kube(undefined, 'delete', 'cluster', 'addons', '--wait', '--timeout', '300s');
  assert.equal(gone.code, 0, gone.stderr);
});

test('a change a running cluster refuses (a downgrade, too many workers) fails at once with the message capt apply gives; the stored object is unchanged', async () => {
  const text = withoutWorkers(await manifest('kept'));
  const applied = await kube(text, 'apply', '-f', '-');
  assert.equal(applied.code, 0, applied.stderr);
  // Once the bridge has handed the cluster to its workflow, a change is asked of that workflow.
  await until('the bridge to apply Cluster kept', async () => {
    const got = await kube(undefined, 'get', 'cluster', 'kept', '-o', 'json');
    return Boolean(JSON.parse(got.stdout).metadata.annotations?.[appliedManifestAnnotation]);
  });
  const asked = Date.now();
  const downgrade = await kube(
    undefined,
    'patch',
    'kubeadmcontrolplane/kept-control-plane',
    '--type=merge',
    '-p',
    JSON.stringify({ spec: { version: older } }),
  );
  console.log(
    `# kubectl patch refused by the cluster's workflow (a dry run through Temporal): ${Date.now() - asked} ms`,
  );
  assert.notEqual(downgrade.code, 0);
  const message = `KubeadmControlPlane default/kept-control-plane at spec.version: cannot update Kubernetes version from ${version} to ${older}: downgrades are not supported; \`capt rollout undo\` returns to an earlier revision`;
  assert.equal(downgrade.stderr, `The request is invalid: ${denied}${message}\n`);
  const stored = await kube(
    undefined,
    'get',
    'kubeadmcontrolplane',
    'kept-control-plane',
    '-o',
    'jsonpath={.spec.version}',
  );
  assert.equal(stored.stdout, version);
  // capt apply of the same change says the same.
  const file = join(stack.home, 'kept-older.yaml');
  await writeFile(file, text.replace(`version: ${version}`, `version: ${older}`));
  const viaCapt = await capt('apply', '-f', file);
  assert.notEqual(viaCapt.code, 0);
  assert.equal(viaCapt.stderr, `error: ${message}\n`);

  // A MachineDeployment over the bound of machines per owner, for the same cluster, after its templates (until
  // they are there, the cluster is not complete and its MachineDeployment not checked whole).
  const [deployment, ...templates] = (await manifest('kept'))
    .slice(text.length)
    .split(/^---\n/m)
    .filter(Boolean);
  const workers = [...templates, deployment!.replace(/^ {2}replicas: \d+$/m, '  replicas: 5001')].join('---\n');
  const tooMany = await kube(workers, 'apply', '-f', '-');
  assert.notEqual(tooMany.code, 0);
  assert.match(
    tooMany.stderr,
    new RegExp(
      `${denied.replace(/[."]/g, '\\$&')}management API, Cluster default/kept \\(document \\d\\) MachineDeployment/kept-md-0 at spec\\.replicas: `,
    ),
  );
  const md = await kube(undefined, 'get', 'machinedeployment', 'kept-md-0');
  assert.match(md.stderr, /"kept-md-0" not found/);
});

test("the webhook answers only the apiserver's client certificate; a malformed AdmissionReview from it gets a 400 saying why, and the webhook keeps refusing", async () => {
  const config = JSON.parse(
    (await kube(undefined, 'get', 'validatingwebhookconfiguration', webhookConfigurationName, '-o', 'json')).stdout,
  ) as { webhooks: { clientConfig: { url: string; caBundle: string }; failurePolicy: string }[] };
  const { url, caBundle } = config.webhooks[0]!.clientConfig;
  assert.match(url, /^https:\/\/127\.0\.0\.1:\d+\/validate$/);
  // The certificate capt dev start gave the apiserver (the kubectl applies above were reviewed, so it presents it).
  const pki = join(stack.home, 'dev/management-api/etc/kubernetes/pki');
  const apiserver = {
    cert: await readFile(join(pki, 'webhook-client.crt'), 'utf8'),
    key: await readFile(join(pki, 'webhook-client.key'), 'utf8'),
  };
  const post = (body: string) => postToWebhook({ url, caBundle }, body, apiserver);
  const review = JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: 'u1',
      operation: 'CREATE',
      object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', namespace: 'default' } },
    },
  });
  const anonymous = await postToWebhook({ url, caBundle }, review);
  assert.deepEqual(
    { ...anonymous, body: JSON.parse(anonymous.body) },
    {
      status: 401,
      body: { message: 'only the apiserver may call this webhook: present the client certificate capt issued it' },
    },
  );
  const otherCa = await createCertificateAuthority('other');
  const stranger = await postToWebhook(
    { url, caBundle },
    review,
    await issueCertificate(otherCa, { commonName: 'kube-apiserver-webhook-client', usage: 'client' }),
  );
  assert.equal(stranger.status, 403, stranger.body);
  assert.match(
    JSON.parse(stranger.body).message,
    /^only the apiserver may call this webhook: this client certificate was not issued by its authority/,
  );
  const answered = await post(review);
  assert.deepEqual(JSON.parse(answered.body), {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    response: { uid: 'u1', allowed: true },
  });
  const malformed = await post('{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": ');
  assert.equal(malformed.status, 400);
  assert.match(JSON.parse(malformed.body).message, /^the body is not JSON: /);
  const notReview = await post('{"kind": "Pod"}');
  assert.deepEqual(
    { ...notReview, body: JSON.parse(notReview.body) },
    {
      status: 400,
      body: { message: 'expected an AdmissionReview of admission.k8s.io/v1' },
    },
  );
  const still = await kube(
    await manifest('after', (text) => text.replace("cidrBlocks: ['10.96.0.0/12']", "cidrBlocks: ['10.96.0.0/33']")),
    'apply',
    '--dry-run=server',
    '-f',
    '-',
  );
  assert.notEqual(still.code, 0);
  assert.ok(
    still.stderr.includes(
      `${denied}management API, Cluster default/after (document 1) Cluster/after at spec.clusterNetwork.services.cidrBlocks`,
    ),
    still.stderr,
  );
});

test('while no bridge answers, kubectl apply goes through (failurePolicy Ignore) and the bridge, back, refuses the cluster on its object with the same message', async () => {
  const status = await capt('dev', 'status');
  const pid = Number(/^bridge:\s+running \(pid (\d+)\)$/m.exec(status.stdout)?.[1]);
  assert.ok(pid > 0, status.stdout);
  process.kill(pid, 'SIGTERM');
  await until('the bridge to stop', async () => /^bridge:\s+stopped$/m.test((await capt('dev', 'status')).stdout));
  const users = withoutWorkers(
    await manifest('ignored', (text) =>
      text.replace(/^ {2}kubeadmConfigSpec:\n/m, '  kubeadmConfigSpec:\n    users:\n      - name: admin\n'),
    ),
  );
  const applied = await kube(users, 'apply', '-f', '-');
  assert.equal(applied.code, 0, applied.stderr);
  assert.equal((await capt('dev', 'start')).code, 0, 'dev start starts the bridge again');
  const refusal = await until('the bridge to refuse Cluster ignored', async () => {
    const got = await kube(
      undefined,
      'get',
      'cluster',
      'ignored',
      '-o',
      'jsonpath={.status.conditions[?(@.type=="Accepted")].message}',
    );
    return got.stdout;
  });
  assert.equal(
    refusal,
    "management API, Cluster default/ignored (document 3) KubeadmControlPlane/ignored-control-plane at spec.kubeadmConfigSpec.users: users are not created by capt's providers: create them in preKubeadmCommands (useradd) or remove the field",
  );
});

test('capt dev stop stops the webhook with the bridge: nothing listens on its port', async () => {
  const url = (
    await kube(
      undefined,
      'get',
      'validatingwebhookconfiguration',
      webhookConfigurationName,
      '-o',
      'jsonpath={.webhooks[0].clientConfig.url}',
    )
  ).stdout;
  assert.equal((await capt('dev', 'stop')).code, 0);
  assert.equal(await listening('127.0.0.1', Number(new URL(url).port)), false);
  assert.deepEqual(await processesMentioning([stack.home]), []);
});
