import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { substituteVariables } from '../../src/api/variables';
import { getValue } from '../../src/etcd/etcd-client';
import { managementApiDir } from '../../src/dev/dev-stack';
import { encryptionConfigFile, managementEtcd } from '../../src/dev/management-api';
import { availableKubernetesVersions, kubectlFor } from '../../src/tools';
import { startDevStack, type DevStackUnderTest } from '../fixtures/dev-stack';
import { listening, processesMentioning } from '../fixtures/leaks';

/**
 * The management API as `capt dev start` runs it, driven with the kubectl setup builds: Cluster API's own
 * kinds and capt's provider kinds served with their schemas, Secrets encrypted in etcd, and a stop that
 * leaves nothing behind.
 */

const kubectl = kubectlFor(availableKubernetesVersions().at(-1)!);
let stack: DevStackUnderTest;
let home: string;
let env: Record<string, string>;
let kubeconfigFile: string;

const capt = (...args: string[]) => stack.capt(...args);
const kube = (...args: string[]) => stack.kubectl(undefined, ...args);
const kubeWithInput = (input: string | undefined, ...args: string[]) => stack.kubectl(input, ...args);

before(async () => {
  stack = await startDevStack();
  ({ home, env, kubeconfigFile } = stack);
  // This process computes the capt home's paths (managementApiDir, encryptionConfigFile) as the CLI does.
  process.env.CAPT_HOME = home;
  console.log(`# capt dev start (Temporal, worker and management API, cold): ${stack.started.ms} ms`);
  assert.match(
    stack.started.stdout,
    new RegExp(
      `^API:\\s+https://127\\.0\\.0\\.1:${env.CAPT_DEV_API_PORT} \\(kubectl --kubeconfig <\\(capt dev kubeconfig\\)`,
      'm',
    ),
  );
});

after(() => stack.remove());

test('kubectl --kubeconfig <(capt dev kubeconfig) reaches the management API; its key is in no other output and its files are 0600', async () => {
  const { stdout, stderr } = await promisify(execFile)(
    'bash',
    [
      '-c',
      `"${kubectl}" --kubeconfig <("${process.execPath}" "${join(__dirname, '../../src/cli/main.js')}" dev kubeconfig) get clusters.cluster.x-k8s.io -A`,
    ],
    { env: { ...process.env, ...env } },
  );
  assert.match(`${stdout}${stderr}`, /No resources found/);
  const key = /client-key-data: (\S+)/.exec(await readFile(kubeconfigFile, 'utf8'))![1]!;
  const status = await capt('dev', 'status');
  assert.match(
    status.stdout,
    new RegExp(`^API:\\s+running \\(pid \\d+\\) at https://127\\.0\\.0\\.1:${env.CAPT_DEV_API_PORT}$`, 'm'),
  );
  assert.ok(!`${status.stdout}${status.stderr}`.includes(key), 'capt dev status prints no key');
  for (const file of [
    encryptionConfigFile(),
    join(managementApiDir(), 'etc/kubernetes/admin.conf'),
    join(managementApiDir(), 'etc/kubernetes/pki/ca.key'),
    join(managementApiDir(), 'etc/kubernetes/pki/apiserver-etcd-client.key'),
  ])
    assert.equal((await stat(file)).mode & 0o777, 0o600, `${file} is readable by its owner only`);
});

test("kubectl api-resources lists Cluster API's kinds and capt's provider kinds, v1beta2 served and labelled with the contract", async () => {
  const groups: [string, string[]][] = [
    [
      'cluster.x-k8s.io',
      ['Cluster', 'ClusterClass', 'Machine', 'MachineDeployment', 'MachineHealthCheck', 'MachineSet', 'MachinePool'],
    ],
    ['controlplane.cluster.x-k8s.io', ['KubeadmControlPlane', 'KubeadmControlPlaneTemplate']],
    ['bootstrap.cluster.x-k8s.io', ['KubeadmConfig', 'KubeadmConfigTemplate']],
    [
      'infrastructure.cluster.x-k8s.io',
      ['LocalCluster', 'LocalMachine', 'LocalMachineTemplate', 'LocalClusterTemplate'],
    ],
  ];
  for (const [group, kinds] of groups) {
    const listed = await kube('api-resources', '--api-group', group, '-o', 'wide');
    assert.equal(listed.code, 0, listed.stderr);
    for (const kind of kinds)
      assert.match(
        listed.stdout,
        new RegExp(`\\s${group.replace(/\./g, '\\.')}/v1beta2\\s+true\\s+${kind}\\s`),
        `${group} serves ${kind} in v1beta2`,
      );
  }
  const labels = async (crd: string) =>
    JSON.parse((await kube('get', 'crd', crd, '-o', 'json')).stdout).metadata.labels as Record<string, string>;
  assert.equal(
    (await labels('kubeadmcontrolplanes.controlplane.cluster.x-k8s.io'))['cluster.x-k8s.io/v1beta2'],
    'v1beta2',
  );
  assert.equal(
    (await labels('localmachinetemplates.infrastructure.cluster.x-k8s.io'))['cluster.x-k8s.io/v1beta2'],
    'v1beta2',
  );
  // v1beta1 is served too, through the bridge's conversion webhook.
  const v1beta1 = await kube('get', 'clusters.v1beta1.cluster.x-k8s.io', '-A');
  assert.equal(v1beta1.code, 0, v1beta1.stderr);
});

test("kubectl applies Cluster API's quickstart objects (a v1beta2 Cluster, its LocalCluster, KubeadmControlPlane, MachineDeployment and templates) and reads them back", async () => {
  // Paused: the bridge hands it to a workflow that makes no machines, so `capt dev stop` later leaves nothing running.
  const manifest = substituteVariables(await readFile(join(__dirname, '../../../examples/quickstart.yaml'), 'utf8'), {
    CLUSTER_NAME: 'first',
  }).text.replace(/^(kind: Cluster\n(?:.*\n)*?spec:\n)/m, '$1  paused: true\n');
  const applied = await kubeWithInput(manifest, 'apply', '-f', '-');
  assert.equal(applied.code, 0, applied.stderr);
  assert.match(applied.stdout, /^cluster\.cluster\.x-k8s\.io\/first created$/m);
  assert.match(applied.stdout, /^kubeadmcontrolplane\.controlplane\.cluster\.x-k8s\.io\/first-control-plane created$/m);
  assert.match(applied.stdout, /^localcluster\.infrastructure\.cluster\.x-k8s\.io\/first created$/m);
  assert.match(applied.stdout, /^machinedeployment\.cluster\.x-k8s\.io\/first-md-0 created$/m);
  const cluster = JSON.parse((await kube('get', 'clusters.cluster.x-k8s.io', 'first', '-o', 'json')).stdout);
  assert.equal(cluster.apiVersion, 'cluster.x-k8s.io/v1beta2');
  assert.deepEqual(cluster.spec.infrastructureRef, {
    apiGroup: 'infrastructure.cluster.x-k8s.io',
    kind: 'LocalCluster',
    name: 'first',
  });
  const kcp = JSON.parse(
    (await kube('get', 'kubeadmcontrolplanes.controlplane.cluster.x-k8s.io', 'first-control-plane', '-o', 'json'))
      .stdout,
  );
  assert.equal(kcp.spec.version, 'v1.36.3');
  assert.equal(kcp.spec.machineTemplate.spec.infrastructureRef.kind, 'LocalMachineTemplate');
  const template = JSON.parse(
    (await kube('get', 'localmachinetemplates.infrastructure.cluster.x-k8s.io', 'first-md-0', '-o', 'json')).stdout,
  );
  assert.equal(template.spec.template.spec.bootDelaySeconds, 0);
  const listed = await kube('get', 'clusters.cluster.x-k8s.io', '-A');
  assert.match(listed.stdout, /^default\s+first\s/m);
});

test("an object with a wrong type for a schema'd field is refused by the CRD's schema (Cluster API's and capt's kinds)", async () => {
  const cluster = await kubeWithInput(
    JSON.stringify({
      apiVersion: 'cluster.x-k8s.io/v1beta2',
      kind: 'Cluster',
      metadata: { name: 'bad', namespace: 'default' },
      spec: { paused: 'yes' },
    }),
    'apply',
    '-f',
    '-',
  );
  assert.notEqual(cluster.code, 0);
  assert.match(cluster.stderr, /spec\.paused: Invalid value: "string": spec\.paused in body must be of type boolean/);
  const template = await kubeWithInput(
    JSON.stringify({
      apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta2',
      kind: 'LocalMachineTemplate',
      metadata: { name: 'bad', namespace: 'default' },
      spec: { template: { spec: { bootDelaySeconds: 'ten' } } },
    }),
    'apply',
    '-f',
    '-',
  );
  assert.notEqual(template.code, 0);
  assert.match(template.stderr, /spec\.template\.spec\.bootDelaySeconds: Invalid value: "string"/);
  const negative = await kubeWithInput(
    JSON.stringify({
      apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta2',
      kind: 'LocalMachine',
      metadata: { name: 'bad', namespace: 'default' },
      spec: { bootDelaySeconds: -1 },
    }),
    'apply',
    '-f',
    '-',
  );
  assert.notEqual(negative.code, 0);
  assert.match(
    negative.stderr,
    /spec\.bootDelaySeconds: Invalid value: -1: spec\.bootDelaySeconds in body should be greater than or equal to 0/,
  );
  assert.equal((await kube('get', 'localmachines.infrastructure.cluster.x-k8s.io', '-A', '-o', 'name')).stdout, '');
});

test("a Secret is encrypted in the management API's etcd (k8s:enc:), readable through the apiserver", async () => {
  const created = await kube('create', 'secret', 'generic', 'first-credentials', '--from-literal=password=hunter2');
  assert.equal(created.code, 0, created.stderr);
  const { endpoint, tls } = await managementEtcd(managementApiDir());
  const raw = await getValue(endpoint, '/registry/secrets/default/first-credentials', tls);
  assert.ok(raw, 'the Secret is in etcd under its registry key');
  assert.ok(
    raw.subarray(0, 8).toString() === 'k8s:enc:',
    `stored encrypted, not ${JSON.stringify(raw.subarray(0, 24).toString())}`,
  );
  assert.ok(!raw.includes('hunter2'), 'the value is not in plaintext');
  const read = await kube('get', 'secret', 'first-credentials', '-o', 'jsonpath={.data.password}');
  assert.equal(Buffer.from(read.stdout, 'base64').toString(), 'hunter2');
});

test('capt init --kubeconfig FILE installs the CRDs into an existing Kubernetes API: create or update, exit 0 twice', async () => {
  const removed = await kube('delete', 'crd', 'localclusters.infrastructure.cluster.x-k8s.io');
  assert.equal(removed.code, 0, removed.stderr);
  const first = await capt('init', '--kubeconfig', kubeconfigFile);
  assert.equal(first.code, 0, first.stderr);
  assert.match(
    first.stdout,
    /^21 CRDs Established \(Cluster API v1\.14\.2 and capt's provider kinds; 1 created or updated, 20 already current\)$/m,
  );
  assert.match(
    (await kube('api-resources', '--api-group', 'infrastructure.cluster.x-k8s.io')).stdout,
    /\sLocalCluster$/m,
  );
  const second = await capt('init', '--kubeconfig', kubeconfigFile);
  assert.equal(second.code, 0, second.stderr);
  assert.match(second.stdout, /; 0 created or updated, 21 already current\)$/m);
  const missing = await capt('init', '--kubeconfig', join(home, 'missing.kubeconfig'));
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /--kubeconfig \S+missing\.kubeconfig: ENOENT/);
});

test('capt dev stop leaves no process or port of the management API; start again keeps its objects and Secrets', async () => {
  const { endpoint } = await managementEtcd(managementApiDir());
  const etcdPort = Number(new URL(endpoint).port);
  // A CRD removed by hand is written again at the next start; the others, unchanged, are not sent again.
  const removed = await kube('delete', 'crd', 'localmachines.infrastructure.cluster.x-k8s.io');
  assert.equal(removed.code, 0, removed.stderr);
  assert.equal((await capt('dev', 'stop')).code, 0);
  assert.deepEqual(await processesMentioning([home]), [], 'nothing of the stack keeps running');
  for (const port of [Number(env.CAPT_DEV_API_PORT), etcdPort])
    assert.equal(await listening('127.0.0.1', port), false, `port ${port} closed`);
  assert.match((await capt('dev', 'status')).stdout, /^API:\s+stopped$/m);

  const started = Date.now();
  const again = await capt('dev', 'start');
  assert.equal(again.code, 0, again.stderr);
  console.log(`# capt dev start (warm): ${Date.now() - started} ms`);
  assert.doesNotMatch(again.stdout, /created the management API's encryption key/, 'the key is kept');
  assert.match(again.stdout, /: 21 CRDs Established \(1 written\)$/m);
  assert.match(
    (await kube('api-resources', '--api-group', 'infrastructure.cluster.x-k8s.io')).stdout,
    /\sLocalMachine$/m,
  );
  const cluster = await kube(
    'get',
    'clusters.cluster.x-k8s.io',
    'first',
    '-o',
    'jsonpath={.spec.infrastructureRef.kind}',
  );
  assert.equal(cluster.stdout, 'LocalCluster', 'the Cluster applied before the restart is kept');
  const secret = await kube('get', 'secret', 'first-credentials', '-o', 'jsonpath={.data.password}');
  assert.equal(Buffer.from(secret.stdout, 'base64').toString(), 'hunter2', 'the Secret is read with the kept key');
  assert.equal((await capt('dev', 'stop')).code, 0);
  assert.deepEqual(await processesMentioning([home]), []);
});
