import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Node } from '@kubernetes/client-node';
import { LocalProvider } from '../../providers/local/local-provider';
import { standardPorts } from '../../providers/local/control-plane-components';
import { KubeClient } from '../../src/kube/kube-client';
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

test('--all stops the whole machine: powered off, only a whole repair brings it back', async () => {
  await provider.breakMachine(driver.ref('faulty-md-0'), 'all');
  assert.equal((await provider.describeMachine(driver.ref('faulty-md-0')))!.power, 'off');
  assert.deepEqual(await provider.machineFaults(driver.ref('faulty-md-0')), ['all']);
  await assert.rejects(
    provider.repairMachine(driver.ref('faulty-md-0'), 'kubelet'),
    /machine faulty-md-0 is stopped whole, so its kubelet cannot start alone; repair the whole machine/,
  );
  await provider.repairMachine(driver.ref('faulty-md-0'));
  assert.equal((await provider.describeMachine(driver.ref('faulty-md-0')))!.power, 'on');
  assert.deepEqual(await provider.machineFaults(driver.ref('faulty-md-0')), []);
});
