import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { connect } from 'node:tls';
import { parseAllDocuments, stringify } from 'yaml';
import { substituteVariables } from '../../src/api/variables';
import { defaultingConfigurationName } from '../../src/bridge/defaulting-registration';
import { apiserverClientSetup } from '../../src/bridge/webhook-install';
import { parseWebhookUrl } from '../../src/management-api/webhook-url';
import { createCertificateAuthority, issueCertificate } from '../../src/pki/certificates';
import { webhookConfigurationName, webhookName } from '../../src/bridge/webhook-registration';
import { availableKubernetesVersions, kubectlFor } from '../../src/tools';
import { freePort } from '../../src/util/free-port';
import { runCapt, runProgram } from '../fixtures/capt-cli';
import { devStackEnv } from '../fixtures/dev-stack-env';
import { startKubeControlPlane, type KubeControlPlane } from '../fixtures/kube-control-plane';
import { listening, processesMentioning } from '../fixtures/leaks';
import { until } from '../fixtures/until';
import { postToWebhook } from '../fixtures/webhook-post';

/**
 * `capt init --webhook-url` into an existing Kubernetes API (a bare control plane: no CRD, no webhook), then
 * `capt bridge --webhook-secret` serving what init registered, with Temporal and a worker from `capt dev start
 * --without-management-api`. The clusters are paused: no machine is made.
 */

const version = availableKubernetesVersions().at(-1)!;
const cli = join(__dirname, '../../src/cli/main.js');
const secret = 'capt-system/capt-webhook-serving';
let home: string;
let env: Record<string, string>;
let plane: KubeControlPlane | undefined;
let kubeconfigFile: string;
let url: string;
let bridge: { process: ChildProcess; log: string; exited: Promise<number | null> } | undefined;

type Doc = { apiVersion: string; kind: string; metadata: Record<string, unknown>; spec: Record<string, unknown> };
type Configuration = {
  metadata: { resourceVersion: string };
  webhooks: { clientConfig: { url: string; caBundle: string } }[];
};

const capt = (...args: string[]) => runCapt(env, ...args);
const kubectl = (...args: string[]) => runProgram(kubectlFor(version), ['--kubeconfig', kubeconfigFile, ...args]);
const getJson = async <T>(...args: string[]): Promise<T> => {
  const got = await kubectl('get', ...args, '-o', 'json');
  assert.equal(got.code, 0, got.stderr);
  return JSON.parse(got.stdout) as T;
};
/** kubectl apply of `docs`, written to a file (kubectl reads it as a user's manifest). */
const apply = async (name: string, docs: Doc[]) => {
  const file = join(home, `${name}.yaml`);
  await writeFile(file, docs.map((d) => stringify(d)).join('---\n'));
  return kubectl('apply', '-f', file);
};
const storedSecret = () =>
  getJson<{ type: string; metadata: { resourceVersion: string }; data: Record<string, string> }>(
    'secret',
    '-n',
    'capt-system',
    'capt-webhook-serving',
  );
const configurations = async () => ({
  mutating: await getJson<Configuration>('mutatingwebhookconfiguration', defaultingConfigurationName),
  validating: await getJson<Configuration>('validatingwebhookconfiguration', webhookConfigurationName),
});
const clusterConversion = async () =>
  (
    await getJson<{
      spec: { conversion: { strategy: string; webhook?: { clientConfig: { url: string; caBundle: string } } } };
    }>('crd', 'clusters.cluster.x-k8s.io')
  ).spec.conversion;

/** The quickstart as documents, paused (the bridge hands it to a workflow that makes no machine). */
async function quickstart(name: string): Promise<Doc[]> {
  const { text } = substituteVariables(await readFile(join(__dirname, '../../../examples/quickstart.yaml'), 'utf8'), {
    CLUSTER_NAME: name,
    KUBERNETES_VERSION: version,
  });
  const docs = parseAllDocuments(text).map((d) => d.toJSON() as Doc);
  docs.find((d) => d.kind === 'Cluster')!.spec.paused = true;
  return docs;
}
const ofKind = (docs: Doc[], kind: string) => docs.find((d) => d.kind === kind)!;

before(async () => {
  home = await mkdtemp(join(tmpdir(), 'capt-init-webhooks-'));
  env = await devStackEnv(home);
  const started = await capt('dev', 'start', '--without-management-api');
  assert.equal(started.code, 0, started.stderr);
  plane = await startKubeControlPlane();
  kubeconfigFile = join(home, 'existing.kubeconfig');
  await writeFile(kubeconfigFile, plane.kubeconfig, { mode: 0o600 });
  url = `https://127.0.0.1:${await freePort('127.0.0.1')}`;
});

/**
 * What init tells the operator to do on the apiserver's host, done as printed with a folder of the test's own:
 * its commands copy the client pair out of the Secret, its two files are written, and the apiserver restarts
 * with --admission-control-config-file.
 */
async function giveApiserverItsClientCertificate(setup: string): Promise<void> {
  const dir = join(home, 'apiserver');
  const printed = setup.replaceAll('/etc/kubernetes/capt', dir);
  const commands = /^ {2}(\(umask 077;.*\))$/m.exec(printed)![1]!;
  // The printed kubectl, reaching this test's API.
  const kubectlHere = `kubectl() { ${JSON.stringify(kubectlFor(version))} --kubeconfig ${JSON.stringify(kubeconfigFile)} "$@"; }`;
  const copied = await runProgram('bash', ['-c', `${kubectlHere}; ${commands}`]);
  assert.equal(copied.code, 0, copied.stderr);
  assert.equal((await stat(join(dir, 'webhook-client.key'))).mode & 0o777, 0o600, 'the key is for root only');
  /** A file's text as printed: the lines indented under its name. */
  const file = (name: string) => {
    const lines = printed.split('\n');
    const start = lines.findIndex((line) => line.startsWith(`  ${join(dir, name)}`));
    const end = lines.findIndex((line, i) => i > start && !line.startsWith('    '));
    return (
      lines
        .slice(start + 1, end)
        .map((line) => line.slice(4))
        .join('\n') + '\n'
    );
  };
  for (const name of ['webhook-client.kubeconfig', 'admission-configuration.yaml'])
    await writeFile(join(dir, name), file(name), { mode: 0o600 });
  const restarting = Date.now();
  await plane!.restartApiserver({ 'admission-control-config-file': join(dir, 'admission-configuration.yaml') });
  console.log(`# the apiserver restarted with --admission-control-config-file: ${Date.now() - restarting} ms`);
}

async function stopBridge(): Promise<number | null | undefined> {
  if (!bridge) return undefined;
  bridge.process.kill('SIGTERM');
  const code = await Promise.race([bridge.exited, new Promise<'late'>((r) => setTimeout(() => r('late'), 15_000))]);
  if (code === 'late') bridge.process.kill('SIGKILL');
  bridge = undefined;
  return code === 'late' ? undefined : code;
}

after(async () => {
  await stopBridge();
  await capt('dev', 'stop');
  await plane?.stop();
  await rm(home, { recursive: true, force: true });
});

test('capt init refuses a --webhook-url that is not https, has a path or a bad port, exit 2, and writes nothing', async () => {
  const cases: [string, string][] = [
    [url.replace('https:', 'http:'), 'http: the apiserver calls webhooks over https only; use https://HOST:PORT'],
    [`${url}/hooks`, '/hooks: no path, query or fragment; capt serves /mutate, /validate and /convert under'],
    ['https://127.0.0.1:99999', 'port 99999: expected 1 to 65535'],
  ];
  for (const [bad, message] of cases) {
    const r = await capt('init', '--kubeconfig', kubeconfigFile, '--webhook-url', bad);
    assert.equal(r.code, 2, r.stderr);
    assert.ok(r.stderr.startsWith(`error: --webhook-url ${bad}: ${message}`), r.stderr);
    assert.equal(r.stdout, '');
  }
  for (const kind of ['crd', 'mutatingwebhookconfigurations', 'validatingwebhookconfigurations', 'clusterroles']) {
    const listed = await kubectl('get', kind, '-o', 'name');
    assert.equal(listed.code, 0, listed.stderr);
    assert.doesNotMatch(listed.stdout, /x-k8s\.io|capt/, `no ${kind} of capt's`);
  }
  assert.match((await kubectl('get', 'namespace', 'capt-system')).stderr, /namespaces "capt-system" not found/);
});

test('capt init --webhook-url installs the CRDs, a CA and serving certificate in a Secret, and the three webhooks pointing at the URL', async () => {
  const r = await capt('init', '--kubeconfig', kubeconfigFile, '--webhook-url', url);
  assert.equal(r.code, 0, r.stderr);
  assert.match(
    r.stdout,
    /^21 CRDs Established \(Cluster API v1\.14\.2 and capt's provider kinds; 21 created or updated/m,
  );
  assert.match(
    r.stdout,
    /^created Secret capt-system\/capt-webhook-serving: a new webhook CA and a serving certificate for 127\.0\.0\.1 until \d{4}-\d\d-\d\d$/m,
  );
  assert.match(
    r.stdout,
    new RegExp(
      `^webhooks registered at ${url}: MutatingWebhookConfiguration capt-defaulting \\(/mutate\\), ValidatingWebhookConfiguration capt-validation \\(/validate\\), 17 CRDs converted \\(/convert, v1beta1 served\\); serve them with capt bridge --kubeconfig FILE --webhook-secret ${secret} where that URL reaches it$`,
      'm',
    ),
  );
  const stored = await storedSecret();
  assert.equal(stored.type, 'kubernetes.io/tls');
  const pem = (key: string) => Buffer.from(stored.data[key]!, 'base64').toString();
  const serving = new X509Certificate(pem('tls.crt'));
  assert.equal(serving.checkIP('127.0.0.1'), '127.0.0.1', 'an IP SAN for the URL host');
  assert.ok(serving.checkIssued(new X509Certificate(pem('ca.crt'))), 'signed by the CA beside it');
  for (const key of ['tls.key', 'ca.key', 'client.key', 'client-ca.key'])
    assert.ok(!`${r.stdout}${r.stderr}`.includes(pem(key).split('\n')[1]!), `init prints no ${key}`);
  const client = new X509Certificate(pem('client.crt'));
  assert.ok(client.checkIssued(new X509Certificate(pem('client-ca.crt'))), 'the client certificate signed by its CA');
  assert.match(
    r.stdout,
    /^made a new client CA and client certificate for the apiserver until \d{4}-\d\d-\d\d in Secret capt-system\/capt-webhook-serving$/m,
  );
  const setup = apiserverClientSetup(parseWebhookUrl(url));
  assert.ok(r.stdout.includes(setup), r.stdout);
  await giveApiserverItsClientCertificate(setup);

  const { mutating, validating } = await configurations();
  assert.deepEqual(mutating.webhooks[0]!.clientConfig, { url: `${url}/mutate`, caBundle: stored.data['ca.crt'] });
  assert.deepEqual(validating.webhooks[0]!.clientConfig, { url: `${url}/validate`, caBundle: stored.data['ca.crt'] });
  const conversion = await clusterConversion();
  assert.equal(conversion.strategy, 'Webhook');
  assert.deepEqual(conversion.webhook!.clientConfig, { url: `${url}/convert`, caBundle: stored.data['ca.crt'] });
});

test('capt bridge --webhook-secret is refused, naming the Secret, when it is missing or holds no usable certificate', async () => {
  const remedy = 'run capt init --kubeconfig FILE --webhook-url https://HOST:PORT to make it';
  const missing = await capt('bridge', '--kubeconfig', kubeconfigFile, '--webhook-secret', 'capt-system/missing');
  assert.equal(missing.code, 1, missing.stderr);
  assert.ok(
    missing.stderr.includes(`error: Secret capt-system/missing not found in the management API: ${remedy}\n`),
    missing.stderr,
  );
  const made = await kubectl('-n', 'capt-system', 'create', 'secret', 'generic', 'broken', '--from-literal=tls.crt=x');
  assert.equal(made.code, 0, made.stderr);
  const annotated = await kubectl(
    '-n',
    'capt-system',
    'annotate',
    'secret',
    'broken',
    `capt.cluster.x-k8s.io/webhook-url=${url}`,
  );
  assert.equal(annotated.code, 0, annotated.stderr);
  const broken = await capt('bridge', '--kubeconfig', kubeconfigFile, '--webhook-secret', 'capt-system/broken');
  assert.equal(broken.code, 1, broken.stderr);
  assert.ok(
    broken.stderr.includes(
      `error: Secret capt-system/broken: the serving certificate cannot be used: it has no tls.key, ca.crt; ${remedy}\n`,
    ),
    broken.stderr,
  );
  // A Secret of an init from before client certificates: its bridge would answer anyone, so it does not start.
  const { data } = await storedSecret();
  const older = Object.fromEntries(Object.entries(data).filter(([key]) => !key.startsWith('client')));
  const file = join(home, 'older-secret.json');
  await writeFile(
    file,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'kubernetes.io/tls',
      metadata: { name: 'older', namespace: 'capt-system', annotations: { 'capt.cluster.x-k8s.io/webhook-url': url } },
      data: older,
    }),
    { mode: 0o600 },
  );
  const created = await kubectl('create', '-f', file);
  assert.equal(created.code, 0, created.stderr);
  const unchecked = await capt('bridge', '--kubeconfig', kubeconfigFile, '--webhook-secret', 'capt-system/older');
  assert.equal(unchecked.code, 1, unchecked.stderr);
  assert.ok(
    unchecked.stderr.includes(
      `error: Secret capt-system/older has no client-ca.crt (it was made by a capt init before the webhooks checked their caller): run capt init --kubeconfig FILE --webhook-url ${url} again and give the apiserver the client certificate it adds, or start the bridge with --insecure-webhook-any-caller\n`,
    ),
    unchecked.stderr,
  );
});

test('capt bridge --webhook-secret serves what init registered and registers nothing: kubectl apply is refused, defaulted and converted', async () => {
  const before = await configurations();
  const child = spawn(process.execPath, [cli, 'bridge', '--kubeconfig', kubeconfigFile, '--webhook-secret', secret], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const started = { process: child, log: '', exited: new Promise<number | null>((r) => child.once('exit', r)) };
  bridge = started;
  child.stdout!.on('data', (c: Buffer) => (started.log += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (started.log += c.toString()));
  await until('capt bridge ready', () => started.log.includes('capt bridge ready'), {
    timeoutMs: 90_000,
    done: (ready) => {
      assert.equal(child.exitCode, null, `the bridge exited:\n${started.log}`);
      return ready;
    },
  });
  assert.match(started.log, /"registeredBy":"capt init"/);
  const keyBody = Buffer.from((await storedSecret()).data['tls.key']!, 'base64')
    .toString()
    .split('\n')[1]!;
  assert.ok(!started.log.includes(keyBody), 'the bridge logs no key');
  const now = await configurations();
  assert.equal(now.mutating.metadata.resourceVersion, before.mutating.metadata.resourceVersion, 'not registered again');
  assert.equal(now.validating.metadata.resourceVersion, before.validating.metadata.resourceVersion);

  // Refused at once by the validating webhook, with capt's located message; the control plane is not stored.
  const refused = await quickstart('refused');
  const kcp = ofKind(refused, 'KubeadmControlPlane').spec as { kubeadmConfigSpec: Record<string, unknown> };
  kcp.kubeadmConfigSpec.users = [{ name: 'admin' }];
  const denied = await apply('refused', refused);
  assert.notEqual(denied.code, 0);
  assert.match(
    denied.stderr,
    new RegExp(
      `admission webhook "${webhookName.replace(/\./g, '\\.')}" denied the request: management API, Cluster default/refused \\(document 3\\) KubeadmControlPlane/refused-control-plane at spec\\.kubeadmConfigSpec\\.users: users are not created by capt's providers`,
    ),
  );
  assert.match(
    (await kubectl('get', 'kubeadmcontrolplane', 'refused-control-plane')).stderr,
    /"refused-control-plane" not found/,
  );

  // Posted directly: refused without the apiserver's client certificate, or with one another CA issued; answered with init's.
  const stored = await storedSecret();
  const registration = { url: `${url}/validate`, caBundle: stored.data['ca.crt']! };
  const pem = (key: string) => Buffer.from(stored.data[key]!, 'base64').toString();
  const review = JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: 'direct',
      operation: 'CREATE',
      object: { ...ofKind(refused, 'KubeadmControlPlane'), metadata: { name: 'direct', namespace: 'default' } },
    },
  });
  assert.equal((await postToWebhook(registration, review)).status, 401);
  const otherCa = await createCertificateAuthority('other');
  const stranger = await issueCertificate(otherCa, { commonName: 'kube-apiserver-webhook-client', usage: 'client' });
  assert.equal((await postToWebhook(registration, review, stranger)).status, 403);
  const answered = await postToWebhook(registration, review, { cert: pem('client.crt'), key: pem('client.key') });
  assert.equal(answered.status, 200, answered.body);
  const { response } = JSON.parse(answered.body) as { response: { allowed: boolean; status: { message: string } } };
  assert.equal(response.allowed, false);
  assert.match(
    response.status.message,
    /KubeadmControlPlane\/direct at spec\.kubeadmConfigSpec\.users: users are not created/,
  );

  // Defaulted: a MachineDeployment without selector (the CRD's schema requires one) or replicas is stored with them.
  const bare = await quickstart('bare');
  const md = ofKind(bare, 'MachineDeployment');
  for (const key of ['selector', 'replicas']) delete md.spec[key];
  const applied = await apply('bare', bare);
  assert.equal(applied.code, 0, applied.stderr);
  const defaulted = await getJson<Doc>('machinedeployment', 'bare-md-0');
  assert.deepEqual(defaulted.spec.selector, {
    matchLabels: { 'cluster.x-k8s.io/cluster-name': 'bare', 'cluster.x-k8s.io/deployment-name': 'bare-md-0' },
  });
  assert.equal(defaulted.spec.replicas, 1);

  // Converted: a v1beta1 Cluster is stored, and read back in v1beta2's shape.
  const v1beta1: Doc = {
    apiVersion: 'cluster.x-k8s.io/v1beta1',
    kind: 'Cluster',
    metadata: { name: 'older', namespace: 'default' },
    spec: {
      paused: true,
      controlPlaneRef: {
        apiVersion: 'controlplane.cluster.x-k8s.io/v1beta1',
        kind: 'KubeadmControlPlane',
        name: 'older-control-plane',
      },
      infrastructureRef: { apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta1', kind: 'LocalCluster', name: 'older' },
    },
  };
  const converted = await apply('older', [v1beta1]);
  assert.equal(converted.code, 0, converted.stderr);
  const read = await getJson<Doc>('clusters.v1beta2.cluster.x-k8s.io', 'older');
  assert.equal(read.apiVersion, 'cluster.x-k8s.io/v1beta2');
  assert.deepEqual(read.spec.infrastructureRef, {
    apiGroup: 'infrastructure.cluster.x-k8s.io',
    kind: 'LocalCluster',
    name: 'older',
  });

  // A serving certificate renewed in the Secret (as init renews one near its end) is served without a restart,
  // and the apiserver, which trusts the same CA, still calls the webhooks.
  const { hostname, port } = new URL(url);
  const renewed = await issueCertificate(
    { cert: pem('ca.crt'), key: pem('ca.key') },
    { commonName: 'capt-webhook', ipAddresses: [hostname], usage: 'server' },
  );
  const base64 = (text: string) => Buffer.from(text).toString('base64');
  const patched = await kubectl(
    '-n',
    'capt-system',
    'patch',
    'secret',
    'capt-webhook-serving',
    '--type=merge',
    '-p',
    JSON.stringify({ data: { 'tls.crt': base64(renewed.cert), 'tls.key': base64(renewed.key) } }),
  );
  assert.equal(patched.code, 0, patched.stderr);
  const servedFingerprint = () =>
    new Promise<string>((resolve, reject) => {
      const socket = connect({ host: hostname, port: Number(port), rejectUnauthorized: false }, () => {
        resolve(socket.getPeerCertificate().fingerprint256);
        socket.end();
      });
      socket.once('error', reject);
    });
  const wanted = new X509Certificate(renewed.cert).fingerprint256;
  await until('the bridge to serve the renewed certificate', async () => (await servedFingerprint()) === wanted, {
    timeoutMs: 30_000,
  });
  // The bridge logs the renewal once it serves it; the log reaches this process a moment after the handshake may.
  await until('the bridge to log the renewal', async () =>
    /serving the renewed certificates of the Secret/.test(started.log),
  );
  assert.equal(child.exitCode, null, 'the same bridge, not restarted');
  const refusedAgain = await apply('refused', refused);
  assert.notEqual(refusedAgain.code, 0);
  assert.match(refusedAgain.stderr, /users are not created by capt's providers/);
});

test('capt init again keeps the CA and certificate: the same Secret, caBundles and configurations; without --webhook-url it says how to install them', async () => {
  const before = { secret: await storedSecret(), ...(await configurations()), conversion: await clusterConversion() };
  const again = await capt('init', '--kubeconfig', kubeconfigFile, '--webhook-url', url);
  assert.equal(again.code, 0, again.stderr);
  assert.match(
    again.stdout,
    /^kept the webhook CA and serving certificate for 127\.0\.0\.1 until \d{4}-\d\d-\d\d in Secret capt-system\/capt-webhook-serving\nkept the client CA and client certificate for the apiserver until \d{4}-\d\d-\d\d in Secret capt-system\/capt-webhook-serving$/m,
  );
  assert.doesNotMatch(again.stdout, /the apiserver must present/, 'nothing new to give the apiserver');
  const plain = await capt('init', '--kubeconfig', kubeconfigFile);
  assert.equal(plain.code, 0, plain.stderr);
  assert.match(
    plain.stdout,
    /^webhooks not installed \(.*\): run capt init --kubeconfig FILE --webhook-url https:\/\/HOST:PORT, HOST:PORT where the apiserver reaches capt bridge --kubeconfig FILE --webhook-secret capt-system\/capt-webhook-serving$/m,
  );
  const now = { secret: await storedSecret(), ...(await configurations()), conversion: await clusterConversion() };
  assert.equal(
    now.secret.metadata.resourceVersion,
    before.secret.metadata.resourceVersion,
    'the Secret is not written',
  );
  assert.deepEqual(now.mutating, before.mutating, 'capt-defaulting unchanged');
  assert.deepEqual(now.validating, before.validating, 'capt-validation unchanged');
  assert.deepEqual(now.conversion, before.conversion, 'the conversion unchanged');
  // The bridge goes on serving under the kept certificate.
  const readBack = await kubectl(
    'get',
    'clusters.v1beta1.cluster.x-k8s.io',
    'older',
    '-o',
    'jsonpath={.spec.infrastructureRef.apiVersion}',
  );
  assert.equal(readBack.stdout, 'infrastructure.cluster.x-k8s.io/v1beta1', readBack.stderr);
});

test('stopping the bridge, the control plane and the dev stack leaves no process or port', async () => {
  assert.equal(await stopBridge(), 0, 'the bridge stops cleanly on SIGTERM');
  assert.equal(await listening('127.0.0.1', Number(new URL(url).port)), false, "the webhook's port is closed");
  assert.equal((await capt('dev', 'stop')).code, 0);
  const root = plane!.root;
  await plane!.stop();
  plane = undefined;
  assert.deepEqual(await processesMentioning([home, root]), [], 'nothing keeps running');
});
