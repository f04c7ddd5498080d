import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createServer } from 'node:https';
import type { V1Node } from '@kubernetes/client-node';
import { LocalProvider } from '../../providers/local/local-provider';
import { standardPorts } from '../../providers/local/control-plane-components';
import { KubeClient } from '../../src/kube/kube-client';
import { kubeconfigCredentials } from '../../src/pki/kubeconfig';
import { createCertificateAuthority } from '../../src/pki/certificates';
import { httpsGet } from '../../src/util/https-probe';
import { availableKubernetesVersions } from '../../src/tools';
import { LocalClusterDriver } from '../fixtures/local-cluster';
import { listening } from '../fixtures/leaks';
import { runCapt } from '../fixtures/capt-cli';
import { until } from '../fixtures/until';

const provider = new LocalProvider();
let home: string;
let driver: LocalClusterDriver;
let kube: KubeClient;
let controlPlaneIP: string;

/** `capt dev …` against this file's CAPT_HOME. */
const capt = (...args: string[]) => runCapt({ CAPT_HOME: home }, ...args);

const ready = (node: V1Node | undefined) => node?.status?.conditions?.find((c) => c.type === 'Ready')?.status;

before(async () => {
  home = await mkdtemp(join(tmpdir(), 'capt-home-'));
  process.env.CAPT_HOME = home;
  driver = new LocalClusterDriver(provider, 'default', 'faulty', availableKubernetesVersions().at(-1)!);
  await driver.create();
  controlPlaneIP = (await driver.machine('faulty-cp-0', 'init')).addresses[0]!;
  // A worker joins with the bootstrap token that init creates: after it, as a control plane orders them.
  assert.deepEqual(await driver.bootstrapResult('faulty-cp-0'), { state: 'succeeded' });
  await driver.machine('faulty-md-0', 'join');
  assert.deepEqual(await driver.bootstrapResult('faulty-md-0'), { state: 'succeeded' });
  kube = new KubeClient(driver.kubeconfig());
  await until('both Nodes Ready', async () => (await kube.listNodes()).filter((n) => ready(n) === 'True').length === 2);
});

after(async () => {
  await provider.deleteCluster('default', 'faulty');
  await rm(home, { recursive: true, force: true });
});

test("capt dev break machine --kubelet: the worker's Node turns Unknown, the other stays Ready; repair makes it Ready again", async () => {
  const broken = await capt('dev', 'break', 'machine', 'faulty-md-0', '--kubelet');
  assert.equal(broken.code, 0, broken.stderr);
  assert.match(
    broken.stdout,
    /machine default\/faulty-md-0 \(cluster faulty\): stopped kubelet; it stays so until `capt dev repair machine faulty-md-0`/,
  );
  const stopped = Date.now();
  await until('the Node to turn Unknown', async () => ready(await kube.getNode('faulty-md-0')) === 'Unknown');
  console.log(`kubelet stopped -> Node Ready=Unknown in ${((Date.now() - stopped) / 1000).toFixed(1)} s`);
  assert.equal(ready(await kube.getNode('faulty-cp-0')), 'True', "the control-plane machine's kubelet still reports");
  assert.deepEqual(await provider.machineFaults(driver.ref('faulty-md-0')), ['kubelet']);

  const repaired = await capt('dev', 'repair', 'machine', 'faulty-md-0');
  assert.equal(repaired.code, 0, repaired.stderr);
  assert.match(repaired.stdout, /faulty-md-0 \(cluster faulty\): nothing broken/);
  const started = Date.now();
  await until('the Node to be Ready again', async () => ready(await kube.getNode('faulty-md-0')) === 'True', {
    timeoutMs: 30_000,
  });
  console.log(`kubelet started -> Node Ready=True in ${((Date.now() - started) / 1000).toFixed(1)} s`);
});

test('a stopped control-plane component stays stopped past its restart loop, and starts again on repair', async () => {
  const port = standardPorts.scheduler;
  await provider.breakMachine(driver.ref('faulty-cp-0'), 'kube-scheduler');
  assert.equal(await listening(controlPlaneIP, port), false, "the scheduler's port is closed at once");
  await sleep(5000); // longer than the static pods' 3 s restart delay
  assert.equal(await listening(controlPlaneIP, port), false, 'and not restarted');
  assert.equal(await listening(controlPlaneIP, standardPorts.apiserver), true, 'the other components run on');
  assert.deepEqual(await provider.machineFaults(driver.ref('faulty-cp-0')), ['kube-scheduler']);
  await provider.repairMachine(driver.ref('faulty-cp-0'), 'kube-scheduler');
  await until('the scheduler to listen again', () => listening(controlPlaneIP, port), { timeoutMs: 30_000 });
  assert.deepEqual(await provider.machineFaults(driver.ref('faulty-cp-0')), []);
});

test('bad requests change nothing and say what to do: unknown machine, unknown component, a component of a worker', async () => {
  const unknown = await capt('dev', 'break', 'machine', 'faulty-md-9', '--all');
  assert.equal(unknown.code, 1);
  assert.match(
    unknown.stderr,
    /no local machine default\/faulty-md-9 on this host .*`capt get machines -A` lists the machines/,
  );
  const component = await capt('dev', 'break', 'machine', 'faulty-cp-0', '--component', 'kubelet');
  assert.equal(component.code, 2);
  assert.match(
    component.stderr,
    /--component kubelet: not a control-plane component; choose one of etcd, kube-apiserver, kube-controller-manager, kube-scheduler/,
  );
  const worker = await capt('dev', 'break', 'machine', 'faulty-md-0', '--component', 'etcd');
  assert.equal(worker.code, 2);
  assert.match(
    worker.stderr,
    /machine faulty-md-0 is a worker and runs no etcd; break its kubelet or the whole machine instead/,
  );
  assert.equal((await capt('dev', 'break', 'machine', 'faulty-md-0')).code, 2, 'break needs a flag');
  assert.deepEqual(await provider.machineFaults(driver.ref('faulty-md-0')), []);
  // A name is checked where it becomes a path: a file outside CAPT_HOME that a path through `..` would reach stays as it was.
  const outside = join(home, '..', `capt-outside-${process.pid}`);
  await mkdir(join(outside, 'root/run/capt'), { recursive: true });
  await writeFile(join(outside, 'machine.json'), 'untouched');
  for (const args of [
    ['machine', `../../../../${basename(outside)}`],
    ['machine', 'faulty-md-0', '-n', '../..'],
  ]) {
    const escaped = await capt('dev', 'break', ...args, '--all');
    assert.equal(escaped.code, 2, escaped.stderr);
    assert.match(escaped.stderr, /(machine name|namespace) ".*" must be a lowercase DNS name/);
  }
  assert.equal(await readFile(join(outside, 'machine.json'), 'utf8'), 'untouched');
  await rm(outside, { recursive: true, force: true });
});

test("capt dev break machine --all stops a worker whole: its kubelet goes silent (the Node's Lease is not renewed) until a whole repair", async () => {
  const broken = await capt('dev', 'break', 'machine', 'faulty-md-0', '--all');
  assert.equal(broken.code, 0, broken.stderr);
  assert.match(broken.stdout, /faulty-md-0 \(cluster faulty\): stopped whole; it stays so until/);
  // A renewal already in flight at the break may still land: the Lease is read once the agent has dropped the machine.
  await sleep(2000);
  const renewed = await leaseRenewTime('faulty-md-0');
  await sleep(12_000); // longer than the kubelet's 10 s renewal period
  assert.equal(await leaseRenewTime('faulty-md-0'), renewed, "the Node's Lease was not renewed");
  await assert.rejects(
    provider.repairMachine(driver.ref('faulty-md-0'), 'kubelet'),
    /machine faulty-md-0 is stopped whole, so its kubelet cannot start alone; repair the whole machine/,
  );
  const repaired = await capt('dev', 'repair', 'machine', 'faulty-md-0');
  assert.equal(repaired.code, 0, repaired.stderr);
  await until('the Lease renewed again', async () => (await leaseRenewTime('faulty-md-0')) !== renewed, {
    timeoutMs: 30_000,
  });
  assert.deepEqual(await provider.machineFaults(driver.ref('faulty-md-0')), []);
});

test("capt dev break machine --all stops a control-plane machine whole: every component held, out of the endpoint's pool; repair brings it back", async () => {
  const broken = await capt('dev', 'break', 'machine', 'faulty-cp-0', '--all');
  assert.equal(broken.code, 0, broken.stderr);
  const ports = Object.entries(standardPorts);
  for (const [component, port] of ports)
    assert.equal(await listening(controlPlaneIP, port), false, `${component} (port ${port}) stopped`);
  // The endpoint's pool seen from outside: something healthy answers on the machine's apiserver address, and
  // the endpoint, which routes to every listed backend whose /readyz answers (after one check, every 500 ms),
  // still sends it nothing.
  const impostor = await healthyApiserverAt(controlPlaneIP, standardPorts.apiserver);
  try {
    const direct = await httpsGet(`https://${controlPlaneIP}:${standardPorts.apiserver}/readyz`, { insecure: true });
    assert.equal(direct.status, 200, 'the address answers /readyz as a healthy apiserver would');
    await sleep(5000); // longer than the static pods' 3 s restart delay
    for (const [component, port] of ports.filter(([, p]) => p !== standardPorts.apiserver))
      assert.equal(await listening(controlPlaneIP, port), false, `${component} (port ${port}) is not restarted`);
    const through = await httpsGet(`https://${driver.endpoint}/through-the-endpoint`, { insecure: true }).catch(
      (err: Error) => err.message,
    );
    assert.equal(typeof through, 'string', `the endpoint refuses the connection: ${JSON.stringify(through)}`);
    assert.deepEqual(impostor.paths(), ['/readyz'], 'the endpoint routed nothing to the powered-off machine');
  } finally {
    await impostor.close();
  }
  const repaired = await capt('dev', 'repair', 'machine', 'faulty-cp-0');
  assert.equal(repaired.code, 0, repaired.stderr);
  const started = Date.now();
  await until(
    'the endpoint to answer again',
    async () =>
      (await httpsGet(`https://${driver.endpoint}/readyz`, { insecure: true }).catch(() => undefined))?.status === 200,
    { timeoutMs: 60_000 },
  );
  console.log(
    `control-plane machine repaired -> endpoint /readyz 200 in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  assert.deepEqual(await provider.machineFaults(driver.ref('faulty-cp-0')), []);
});

/** The renewTime of the Node's heartbeat Lease, read with the cluster's admin credentials. */
async function leaseRenewTime(node: string): Promise<string> {
  const { server, ...tls } = kubeconfigCredentials(driver.kubeconfig());
  const lease = await httpsGet(`${server}/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${node}`, tls);
  assert.equal(lease.status, 200, lease.body);
  return JSON.parse(lease.body).spec.renewTime;
}

/** A TLS server on host:port that answers 200 to everything, as a healthy apiserver answers /readyz; it records each path asked for. */
async function healthyApiserverAt(host: string, port: number) {
  const seen: string[] = [];
  const server = createServer(await createCertificateAuthority('impostor'), (req, res) => {
    seen.push(req.url ?? '');
    res.end('ok');
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, host, resolve));
  return {
    paths: () => [...new Set(seen)],
    close: () => new Promise<void>((resolve) => server.close(() => resolve()).closeAllConnections()),
  };
}
