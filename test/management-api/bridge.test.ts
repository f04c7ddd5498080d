import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { substituteVariables } from '../../src/api/variables';
import { clusterFinalizer } from '../../src/bridge/bridge';
import type { MachineStatus } from '../../src/contract/machine';
import { managementKubeconfig, startManagementApi, stopManagementApi } from '../../src/dev/management-api';
import { availableKubernetesVersions, clusterctlPath, kubectlFor } from '../../src/tools';
import { freePort } from '../../src/util/free-port';
import { clusterDir, machinesDir } from '../../providers/local/layout';
import { harnessWithClient } from '../fixtures/machine-harness';
import { apiserverRequests } from '../fixtures/apiserver-requests';
import { until } from '../fixtures/until';
import { runCapt, runProgram } from '../fixtures/capt-cli';

const root = join(__dirname, '../../..');
const cli = join(root, 'dist/src/cli/main.js');
const suite = harnessWithClient();
const h = suite.harness;
const version = availableKubernetesVersions().at(-1)!;
let dir: string;
let kubeconfig: string;
// Two bridges, as an operator may run for availability: one holds the Lease and acts, the other stands by.
const bridges: { process: ChildProcess; log: string }[] = [];
const bridgeLog = () => bridges.map((b, i) => `bridge ${i}:\n${b.log.slice(-3000)}`).join('\n');

const kubectl = (...args: string[]) => runProgram(kubectlFor(version), ['--kubeconfig', kubeconfig, ...args]);
type MachineObject = {
  metadata: {
    name: string;
    ownerReferences: { kind: string; name: string }[];
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec: { providerID?: string; version: string };
  status: { nodeRef?: { name: string }; nodeInfo?: { kubeletVersion: string }; phase: string };
};
type MachineList = { items: MachineObject[] };
type ApiConditionShape = { type: string; status: string };
const machineObject = async (name: string) =>
  JSON.parse((await kubectl('get', 'machine', name, '-o', 'json')).stdout) as MachineObject;
const clusterObject = async (name: string) =>
  JSON.parse((await kubectl('get', 'cluster', name, '-o', 'json')).stdout) as {
    metadata: { generation: number; finalizers?: string[] };
    status: Record<string, unknown> & {
      conditions: { type: string; status: string; reason: string; message?: string }[];
    };
  };

before(async () => {
  await suite.started();
  dir = await mkdtemp(join(tmpdir(), 'capt-bridge-'));
  // The management API keeps its encryption key with capt's other secrets, under CAPT_HOME.
  process.env.CAPT_HOME = h.home;
  await startManagementApi(dir, await freePort('127.0.0.1'), () => undefined);
  kubeconfig = join(dir, 'admin.kubeconfig');
  await writeFile(kubeconfig, await managementKubeconfig(dir), { mode: 0o600 });
  for (let i = 0; i < 2; i++) {
    const child = spawn(process.execPath, [cli, 'bridge', '--kubeconfig', kubeconfig, '--interval', '1s'], {
      env: { ...process.env, TEMPORAL_ADDRESS: h.env.address, CAPT_HOME: h.home },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const bridge = { process: child, log: '' };
    child.stdout!.on('data', (c: Buffer) => (bridge.log += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (bridge.log += c.toString()));
    bridges.push(bridge);
  }
});

after(async () => {
  for (const b of bridges) b.process.kill('SIGKILL');
  await stopManagementApi(dir);
  await rm(dir, { recursive: true, force: true });
});

async function quickstart(name: string): Promise<string> {
  return substituteVariables(await readFile(join(root, 'examples/quickstart.yaml'), 'utf8'), {
    CLUSTER_NAME: name,
    CONTROL_PLANE_MACHINE_COUNT: '1',
    WORKER_MACHINE_COUNT: '1',
    KUBERNETES_VERSION: version,
  }).text;
}

test('kubectl apply of Cluster API objects makes a capt cluster: kubectl wait sees it Available, kubectl scale scales it, a refused change says why on the object, kubectl delete deletes it through its workflow', async () => {
  const file = join(dir, 'kb.yaml');
  await writeFile(file, await quickstart('kb'));
  const applied = await kubectl('apply', '-f', file);
  assert.equal(applied.code, 0, applied.stderr);
  assert.match(applied.stdout, /cluster\.cluster\.x-k8s\.io\/kb created/);

  const waited = await kubectl('wait', '--for=condition=Available', 'cluster/kb', '--timeout=600s');
  assert.equal(waited.code, 0, `${waited.stderr}\n${bridgeLog()}`);
  const ready = await clusterObject('kb');
  assert.equal(ready.status.phase, 'Provisioned');
  assert.deepEqual(ready.metadata.finalizers, [clusterFinalizer]);
  assert.ok(
    ready.status.conditions.every((c) => c.reason),
    'every condition has a reason, as metav1.Condition requires',
  );
  // The workflows carry it out: Temporal, the provider and the object agree.
  const view = await suite.client.clusterStatus('default', 'kb');
  assert.equal(view.phase, 'Provisioned');
  assert.equal((await readdir(machinesDir(clusterDir('default', 'kb')))).length, 2);
  await until('the status to observe the generation applied', async () => {
    const o = await clusterObject('kb');
    return o.status.observedGeneration === o.metadata.generation && o;
  });
  assert.deepEqual((await clusterObject('kb')).status.workers, {
    desiredReplicas: 1,
    replicas: 1,
    readyReplicas: 1,
    availableReplicas: 1,
    upToDateReplicas: 1,
    // The versions the workers run, with how many run each, as Cluster API's status.workers.versions.
    versions: [{ version, replicas: 1 }],
  });

  // One bridge led and applied the cluster; the other stood by throughout.
  const leaders = bridges.filter((b) => b.log.includes('bridge: leading'));
  assert.equal(leaders.length, 1, bridgeLog());
  const standby = bridges.find((b) => !leaders.includes(b))!;
  assert.match(standby.log, /bridge: standing by \(another bridge holds Lease kube-system\/capt-bridge\)/);
  assert.doesNotMatch(standby.log, /applied the cluster/);
  assert.match(leaders[0]!.log, /applied the cluster from the management API/);

  // The <cluster>-kubeconfig Secret, as Cluster API writes it: a kubeconfig kubectl can use on the cluster.
  const secret = await until('the kb-kubeconfig Secret', async () => {
    const got = await kubectl('get', 'secret', 'kb-kubeconfig', '-o', 'json');
    return got.code === 0 && (JSON.parse(got.stdout) as { type: string; data: { value: string } });
  });
  assert.equal(secret.type, 'cluster.x-k8s.io/secret');
  const workloadKubeconfig = join(dir, 'kb.kubeconfig');
  await writeFile(workloadKubeconfig, Buffer.from(secret.data.value, 'base64'), { mode: 0o600 });
  const workloadKubectl = (...args: string[]) =>
    runProgram(kubectlFor(version), ['--kubeconfig', workloadKubeconfig, ...args]);
  const nodes = await workloadKubectl('get', 'nodes', '-o', 'name');
  assert.equal(nodes.code, 0, nodes.stderr);
  assert.equal(nodes.stdout.trim().split('\n').length, 2, nodes.stdout);

  // The scale subresource, as kubectl and cluster-autoscaler use it.
  const scaled = await kubectl('scale', 'machinedeployment/kb-md-0', '--replicas=2');
  assert.equal(scaled.code, 0, scaled.stderr);
  await until('the MachineDeployment workflow to run 2 machines', async () => {
    const md = await suite.client.ownerStatus('machinedeployment', 'default', 'kb-md-0');
    return md.replicas === 2 && md.readyReplicas === 2 && md;
  });
  assert.equal((await readdir(machinesDir(clusterDir('default', 'kb')))).length, 3);
  // MachineSets and Machines exist as Cluster API's controllers make them, each Machine with its Node.
  const listed = await until('3 Machine objects, Running with a nodeRef', async () => {
    const list = JSON.parse((await kubectl('get', 'machines', '-o', 'json')).stdout) as MachineList;
    return (
      list.items.length === 3 && list.items.every((m) => m.status?.phase === 'Running' && m.status.nodeRef) && list
    );
  });
  // Each controlled as Cluster API's are: the workers by their MachineSet, the control-plane machine by its KCP.
  assert.deepEqual(listed.items.map((m) => m.metadata.ownerReferences.map((r) => r.kind).join()).sort(), [
    'KubeadmControlPlane',
    'MachineSet',
    'MachineSet',
  ]);
  const sets = await kubectl('get', 'machinesets', '-o', 'name');
  assert.match(sets.stdout, /machineset\.cluster\.x-k8s\.io\/kb-md-0-/);

  // clusterctl, built from Cluster API's module: its tree of the cluster, with conditions, and its kubeconfig.
  const clusterctl = (...args: string[]) =>
    runProgram(clusterctlPath(), [...args, '--kubeconfig', kubeconfig], { CLUSTERCTL_DISABLE_VERSIONCHECK: 'true' });
  const tree = await until('clusterctl describe to show every machine available and up to date', async () => {
    const d = await clusterctl('describe', 'cluster', 'kb', '--show-conditions', 'all');
    assert.equal(d.code, 0, d.stderr);
    // The counts come from the machines, the conditions from the cluster workflow, which hears of the scale a moment later.
    return (
      /Cluster default\/kb\s+3\/3\s+3\s+3\s+3/.test(d.stdout) && /WorkersAvailable\s+True/.test(d.stdout) && d.stdout
    );
  });
  for (const line of [
    /KubeadmControlPlane default\/kb-control-plane, v\S+\s+1\/1\s+1\s+1\s+1/,
    /MachineDeployment default\/kb-md-0, v\S+\s+2\/2\s+2\s+2\s+2/,
    /Machine default\/kb-control-plane-\S+, v\S+\s+1\s+1\s+1\s+1/,
    // A MachineDeployment's machines in one state are shown together.
    /└─2 Machines\.\.\.\s+2\s+2\s+2\s+True\s+Ready/,
    /Available\s+True\s+Available/,
    /NodeHealthy\s+True/,
  ])
    assert.match(tree, line, tree);
  const got = await clusterctl('get', 'kubeconfig', 'kb');
  assert.equal(got.code, 0, got.stderr);
  // clusterctl prints the Secret's kubeconfig, with a newline of its own.
  assert.equal(got.stdout.trimEnd(), Buffer.from(secret.data.value, 'base64').toString().trimEnd());

  const capt = (...args: string[]) => runCapt({ TEMPORAL_ADDRESS: h.env.address, CAPT_HOME: h.home }, ...args);
  // cluster-autoscaler's clusterapi contract, driven with kubectl as the autoscaler drives it (it cannot be built
  // here): node-group size annotations kept, each Machine's providerID its Node's, delete-machine then a scale-down.
  const sizes = {
    'cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size': '1',
    'cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size': '3',
  };
  const sized = await kubectl(
    'annotate',
    'machinedeployment/kb-md-0',
    ...Object.entries(sizes).map(([k, v]) => `${k}=${v}`),
  );
  assert.equal(sized.code, 0, sized.stderr);
  // capt's own door shows the same nodeInfo (`capt get machines -o yaml` prints these fields).
  const captGet = await capt('get', 'machines', '-o', 'json');
  assert.equal(captGet.code, 0, captGet.stderr);
  const captMachines = (JSON.parse(captGet.stdout) as { items: MachineStatus[] }).items;
  for (const m of listed.items) {
    const node = await workloadKubectl('get', 'node', m.status.nodeRef!.name, '-o', 'jsonpath={.spec.providerID}');
    assert.equal(node.code, 0, node.stderr);
    assert.ok(m.spec.providerID, `machine ${m.metadata.name} has a providerID`);
    assert.equal(m.spec.providerID, node.stdout, `machine ${m.metadata.name}'s providerID is its Node's`);
    // Its Node's nodeInfo, as Cluster API copies it: the kubelet's version is the machine's.
    const info = await workloadKubectl('get', 'node', m.status.nodeRef!.name, '-o', 'jsonpath={.status.nodeInfo}');
    assert.equal(info.code, 0, info.stderr);
    assert.deepEqual(m.status.nodeInfo, JSON.parse(info.stdout), `machine ${m.metadata.name}'s nodeInfo is its Node's`);
    assert.equal(m.status.nodeInfo!.kubeletVersion, m.spec.version);
    assert.deepEqual(captMachines.find((c) => c.name === m.metadata.name)?.nodeInfo, m.status.nodeInfo);
  }
  // Without the mark the MachineDeployment would take the first by name (its stand-in for Random): mark the last.
  const workers = listed.items
    .filter((m) => m.metadata.ownerReferences[0]!.kind === 'MachineSet')
    .map((m) => m.metadata.name)
    .sort();
  const [kept, marked] = workers as [string, string];
  const mark = await kubectl('annotate', `machine/${marked}`, 'cluster.x-k8s.io/delete-machine=yes');
  assert.equal(mark.code, 0, mark.stderr);
  const autoscaled = await kubectl('scale', 'machinedeployment/kb-md-0', '--replicas=1');
  assert.equal(autoscaled.code, 0, autoscaled.stderr);
  const afterMark = await until('the MachineDeployment workflow to run 1 machine', async () => {
    const md = await suite.client.ownerStatus('machinedeployment', 'default', 'kb-md-0');
    return (
      md.replicas === 1 &&
      md.machines.length === 1 &&
      md.machines.every((m) => m.phase === 'Running' && !m.deleting) &&
      md
    );
  });
  assert.deepEqual(
    afterMark.machines.map((m) => m.name),
    [kept],
    `${marked} carried delete-machine and went first`,
  );
  await until(`the Machine object ${marked} to go`, async () => (await kubectl('get', 'machine', marked)).code !== 0);
  const md = JSON.parse((await kubectl('get', 'machinedeployment', 'kb-md-0', '-o', 'json')).stdout) as {
    metadata: { annotations: Record<string, string> };
    spec: { replicas: number };
  };
  assert.equal(md.spec.replicas, 1);
  for (const [k, v] of Object.entries(sizes)) assert.equal(md.metadata.annotations[k], v, `${k} read back`);

  // Annotations set and removed with kubectl reach the machine's workflow, as delete-machine did.
  const noted = await kubectl('annotate', `machine/${kept}`, 'example.com/note=kept');
  assert.equal(noted.code, 0, noted.stderr);
  await until(`machine ${kept}'s workflow to carry example.com/note`, async () => {
    const [m] = await suite.client.machineStatuses('default', [kept]);
    return m?.annotations['example.com/note'] === 'kept';
  });
  const unnoted = await kubectl('annotate', `machine/${kept}`, 'example.com/note-');
  assert.equal(unnoted.code, 0, unnoted.stderr);
  await until(`machine ${kept}'s workflow to drop example.com/note`, async () => {
    const [m] = await suite.client.machineStatuses('default', [kept]);
    return !!m && !('example.com/note' in m.annotations);
  });
  assert.equal((await machineObject(kept)).metadata.annotations?.['example.com/note'], undefined);

  // A template label added and then removed in place reaches the machine, its object and its MachineSet without
  // a rollout, and a label someone put on the Machine object alone stays (the bridge removes only what it wrote).
  assert.equal((await kubectl('label', `machine/${kept}`, 'example.com/own=mine')).code, 0);
  const relabel = (value: string | null) =>
    kubectl(
      'patch',
      'machinedeployment/kb-md-0',
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { template: { metadata: { labels: { 'example.com/tier': value } } } } }),
    );
  const setLabels = async () =>
    (JSON.parse((await kubectl('get', 'machinesets', '-o', 'json')).stdout) as { items: MachineObject[] }).items.map(
      (o) => o.metadata.labels?.['example.com/tier'],
    );
  assert.equal((await relabel('gold')).code, 0);
  await until(`machine ${kept}'s object and its MachineSet to carry example.com/tier=gold`, async () => {
    const o = await machineObject(kept);
    return o.metadata.labels?.['example.com/tier'] === 'gold' && (await setLabels()).every((v) => v === 'gold') && o;
  });
  assert.equal((await relabel(null)).code, 0);
  const relabelled = await until(`machine ${kept}'s object and its MachineSet to drop example.com/tier`, async () => {
    const o = await machineObject(kept);
    return !('example.com/tier' in (o.metadata.labels ?? {})) && (await setLabels()).every((v) => v === undefined) && o;
  });
  assert.equal(relabelled.metadata.labels?.['example.com/own'], 'mine');
  // An annotation set with capt's own door shows on the object at once too, not at the machine's next report.
  const annotated = await capt('annotate', 'machine', kept, 'example.com/by=capt');
  assert.equal(annotated.code, 0, annotated.stderr);
  await until(`machine ${kept}'s object to show example.com/by`, async () => {
    const o = await machineObject(kept);
    return o.metadata.annotations?.['example.com/by'] === 'capt' && o;
  });
  assert.deepEqual(
    (await suite.client.ownerStatus('machinedeployment', 'default', 'kb-md-0')).machines.map((m) => m.name),
    [kept],
    'changed in place: the same machine',
  );

  // Deletion both ways, as Cluster API's Machine finalizer makes it. A machine capt deletes (held at a pre-drain hook
  // set with kubectl) shows its deletion timestamp and phase Deleting, and its object goes with it.
  const hook = 'pre-drain.delete.hook.machine.cluster.x-k8s.io/hold';
  assert.equal((await kubectl('annotate', `machine/${kept}`, `${hook}=bridge-test`)).code, 0);
  await until(`machine ${kept}'s workflow to carry the hook`, async () => {
    const [m] = await suite.client.machineStatuses('default', [kept]);
    return m?.annotations[hook] === 'bridge-test';
  });
  const held = await capt('delete', 'machine', kept);
  assert.equal(held.code, 0, held.stderr);
  const deleting = await until(`the Machine object ${kept} to show its deletion`, async () => {
    const o = (await machineObject(kept)) as MachineObject & { metadata: { deletionTimestamp?: string } };
    return !!o.metadata.deletionTimestamp && o.status.phase === 'Deleting' && o;
  });
  assert.deepEqual((deleting.metadata as { finalizers?: string[] }).finalizers, ['machine.cluster.x-k8s.io']);
  assert.equal((await kubectl('annotate', `machine/${kept}`, `${hook}-`)).code, 0);
  const released = await kubectl('wait', '--for=delete', `machine/${kept}`, '--timeout=120s');
  assert.equal(released.code, 0, `${released.stderr}\n${bridgeLog()}`);
  // A Machine object deleted with kubectl deletes its machine, and the MachineDeployment replaces it.
  const replacement = await until('the MachineDeployment to replace the deleted machine', async () => {
    const o = await suite.client.ownerStatus('machinedeployment', 'default', 'kb-md-0');
    const [m] = o.machines;
    return o.machines.length === 1 && m!.name !== kept && m!.phase === 'Running' && m!.name;
  });
  await until(
    `the Machine object ${replacement}`,
    async () => (await kubectl('get', 'machine', replacement)).code === 0,
  );
  const removed = await kubectl('delete', `machine/${replacement}`, '--timeout=120s');
  assert.equal(removed.code, 0, `${removed.stderr}\n${bridgeLog()}`);
  const last = await until('the MachineDeployment to replace the machine deleted with kubectl', async () => {
    const o = await suite.client.ownerStatus('machinedeployment', 'default', 'kb-md-0');
    const [m] = o.machines;
    return o.machines.length === 1 && m!.name !== replacement && m!.phase === 'Running' && m!.name;
  });
  assert.equal((await readdir(machinesDir(clusterDir('default', 'kb')))).length, 2);

  // Paused with kubectl as with a manifest: a scale is recorded but carried out only once unpaused.
  const pause = (paused: boolean) =>
    kubectl('patch', 'cluster/kb', '--type=merge', '-p', JSON.stringify({ spec: { paused } }));
  assert.equal((await pause(true)).code, 0);
  await until('the Cluster object to show Paused', async () =>
    (await clusterObject('kb')).status.conditions.some((c) => c.type === 'Paused' && c.status === 'True'),
  );
  assert.equal((await suite.client.clusterStatus('default', 'kb')).paused, true);
  assert.equal((await kubectl('scale', 'machinedeployment/kb-md-0', '--replicas=2')).code, 0);
  const pending = await until('the paused MachineDeployment to record the scale', async () => {
    const o = await suite.client.ownerStatus('machinedeployment', 'default', 'kb-md-0');
    return o.replicas === 2 && o;
  });
  await new Promise((r) => setTimeout(r, 3000));
  const stillOne = await suite.client.ownerStatus('machinedeployment', 'default', 'kb-md-0');
  assert.deepEqual(
    stillOne.machines.map((m) => m.name),
    [last],
    `no machine is created while paused (${JSON.stringify(pending.step)})`,
  );
  assert.equal((await readdir(machinesDir(clusterDir('default', 'kb')))).length, 2);
  assert.equal((await pause(false)).code, 0);
  await until('the unpaused MachineDeployment to run 2 machines', async () => {
    const o = await suite.client.ownerStatus('machinedeployment', 'default', 'kb-md-0');
    return o.readyReplicas === 2 && o.machines.length === 2;
  });

  // capt scale changes the workflows; the object follows and is not scaled back by the bridge.
  const down = await capt('scale', 'machinedeployment', 'kb-md-0', '--replicas', '1', '--wait');
  assert.equal(down.code, 0, down.stderr);
  // The status lag: from the workflows done (--wait returned) to the object showing it, spec and status.
  const scaledAt = Date.now();
  await until(
    'the MachineDeployment object to show 1 replica',
    async () => {
      const o = JSON.parse((await kubectl('get', 'machinedeployment', 'kb-md-0', '-o', 'json')).stdout) as {
        spec: { replicas: number };
        status: { replicas: number; readyReplicas: number };
      };
      return o.spec.replicas === 1 && o.status.replicas === 1 && o.status.readyReplicas === 1;
    },
    { intervalMs: 100 },
  );
  console.log(`status lag: the MachineDeployment object showed capt scale ${Date.now() - scaledAt} ms after it ended`);
  await new Promise((r) => setTimeout(r, 3000));
  assert.equal((await suite.client.ownerStatus('machinedeployment', 'default', 'kb-md-0')).replicas, 1);

  // The bridge reads the objects from its watches: passes (every second here) list nothing.
  const machineLists = async () =>
    apiserverRequests(
      (await kubectl('get', '--raw', '/metrics')).stdout,
      (l) => /resource="machines"/.test(l) && /verb="LIST"/.test(l),
    );
  // Listing each pass would make at least 5 lists here; a watch the apiserver ends is listed again once.
  const listsBefore = await machineLists();
  await new Promise((r) => setTimeout(r, 5000));
  const lists = (await machineLists()) - listsBefore;
  assert.ok(lists <= 1, `${lists} lists of the Machines in 5 s: passes read them from the watch\n${bridgeLog()}`);

  // capt rollout undo is written back too: the object names the template the workflow runs again, so a later
  // kubectl change does not roll the undone template out again.
  type TemplateRefs = { spec: { template: { spec: { infrastructureRef: { name: string } } } } };
  const infrastructureName = async () =>
    (JSON.parse((await kubectl('get', 'machinedeployment', 'kb-md-0', '-o', 'json')).stdout) as TemplateRefs).spec
      .template.spec.infrastructureRef.name;
  const kbMd0 = () => suite.client.ownerStatus('machinedeployment', 'default', 'kb-md-0');
  const rolledOut = (revision: number) =>
    until(`revision ${revision} of kb-md-0 rolled out`, async () => {
      const o = await kbMd0();
      return o.revision === revision && o.rolloutComplete && o.readyReplicas === o.replicas && o;
    });
  const first = (await kbMd0()).revision;
  const otherTemplate = join(dir, 'kb-md-0-b.yaml');
  await writeFile(
    otherTemplate,
    JSON.stringify({
      apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta2',
      kind: 'LocalMachineTemplate',
      metadata: { name: 'kb-md-0-b', namespace: 'default' },
      spec: { template: { spec: { bootDelaySeconds: 0 } } },
    }),
  );
  assert.equal((await kubectl('apply', '-f', otherTemplate)).code, 0);
  const toB = { spec: { template: { spec: { infrastructureRef: { name: 'kb-md-0-b' } } } } };
  assert.equal(
    (await kubectl('patch', 'machinedeployment/kb-md-0', '--type=merge', '-p', JSON.stringify(toB))).code,
    0,
  );
  await rolledOut(first + 1);
  const undone = await capt('rollout', 'undo', 'machinedeployment/kb-md-0', '--wait');
  assert.equal(undone.code, 0, undone.stderr);
  await rolledOut(first + 2);
  await until(
    'the MachineDeployment object to name the undone template',
    async () => (await infrastructureName()) === 'kb-md-0',
  ).catch((err: Error) => assert.fail(`${err.message}\n${bridgeLog()}`));
  assert.equal((await kubectl('scale', 'machinedeployment/kb-md-0', '--replicas=2')).code, 0);
  const scaledAfterUndo = await until('kb-md-0 scaled to 2 after the undo', async () => {
    const o = await kbMd0();
    return o.readyReplicas === 2 && o.machines.length === 2 && o;
  });
  assert.equal(scaledAfterUndo.revision, first + 2, 'the scale made no new revision: the undone template stays');
  assert.equal((await kubectl('scale', 'machinedeployment/kb-md-0', '--replicas=1')).code, 0);
  await until('kb-md-0 back to 1', async () => {
    const o = await kbMd0();
    return o.readyReplicas === 1 && o.machines.length === 1;
  });
  assert.equal((await kbMd0()).revision, first + 2);

  // capt rollout restart is written back as spec.rollout.after, the restart's time (as clusterctl alpha rollout
  // restart writes it), and applying the object with it restarts nothing again.
  const restarted = await capt('rollout', 'restart', 'machinedeployment/kb-md-0', '--wait');
  assert.equal(restarted.code, 0, restarted.stderr);
  const restart = await rolledOut(first + 3);
  assert.ok(restart.restartedAt, 'the restart made the current revision');
  type RolloutAfter = { spec: { rollout?: { after?: string } } };
  await until('the MachineDeployment object to show the restart as spec.rollout.after', async () => {
    const o = JSON.parse((await kubectl('get', 'machinedeployment', 'kb-md-0', '-o', 'json')).stdout) as RolloutAfter;
    return o.spec.rollout?.after !== undefined && Date.parse(o.spec.rollout.after) === Date.parse(restart.restartedAt!);
  }).catch((err: Error) => assert.fail(`${err.message}\n${bridgeLog()}`));
  assert.equal((await kubectl('annotate', 'machinedeployment/kb-md-0', 'example.com/after-restart=yes')).code, 0);
  await new Promise((r) => setTimeout(r, 3000));
  assert.equal((await kbMd0()).revision, first + 3, 'the written-back rollout.after restarted nothing again');

  // A MachineHealthCheck applied with kubectl is carried out by the MachineDeployment it selects, and its status
  // is written as Cluster API writes it.
  const check = join(dir, 'kb-health.yaml');
  await writeFile(
    check,
    JSON.stringify({
      apiVersion: 'cluster.x-k8s.io/v1beta2',
      kind: 'MachineHealthCheck',
      metadata: { name: 'kb-md-0-health', namespace: 'default' },
      spec: {
        clusterName: 'kb',
        selector: { matchLabels: { 'node.cluster.x-k8s.io/pool': 'md-0' } },
        checks: { unhealthyNodeConditions: [{ type: 'Ready', status: 'Unknown', timeoutSeconds: 300 }] },
        remediation: { triggerIf: { unhealthyLessThanOrEqualTo: 2 } },
      },
    }),
  );
  assert.equal((await kubectl('apply', '-f', check)).code, 0);
  const [worker] = (await suite.client.ownerStatus('machinedeployment', 'default', 'kb-md-0')).machines;
  const checked = await until('the MachineHealthCheck object to show its status', async () => {
    const o = JSON.parse((await kubectl('get', 'machinehealthcheck', 'kb-md-0-health', '-o', 'json')).stdout) as {
      status?: { conditions?: ApiConditionShape[] } & Record<string, unknown>;
    };
    return o.status?.expectedMachines === 1 && o.status.observedGeneration === 1 && o.status;
  });
  assert.deepEqual(
    { ...checked, conditions: checked.conditions?.map((c) => `${c.type}=${c.status}`) },
    {
      expectedMachines: 1,
      currentHealthy: 1,
      remediationsAllowed: 2,
      targets: [worker!.name],
      conditions: ['RemediationAllowed=True'],
      observedGeneration: 1,
    },
  );
  // The Machine it judges shows its verdict, as Cluster API's check writes it.
  const judged = await until('the worker Machine to show the check judged it', async () =>
    (
      (await machineObject(worker!.name)).status as { conditions?: (ApiConditionShape & { reason: string })[] }
    ).conditions?.find((c) => c.type === 'HealthCheckSucceeded'),
  );
  assert.deepEqual([judged.status, judged.reason], ['True', 'HealthCheckSucceeded']);

  // A control plane older than its workers is refused with capt apply's own message, on the object, and the workflow keeps its version.
  const older = availableKubernetesVersions().at(-2)!;
  assert.notEqual(older, version);
  const patched = await kubectl(
    'patch',
    'kubeadmcontrolplane/kb-control-plane',
    '--type=merge',
    '-p',
    JSON.stringify({ spec: { version: older } }),
  );
  assert.equal(patched.code, 0, patched.stderr);
  const refused = await until('the refusal on the Cluster object', async () => {
    const c = (await clusterObject('kb')).status.conditions.find((x) => x.type === 'Accepted');
    return c?.status === 'False' && c;
  });
  assert.match(refused.message ?? '', /management API, Cluster default\/kb/);
  assert.match(
    refused.message ?? '',
    new RegExp(
      `at spec\\.template\\.spec\\.version: workers at ${version} would be newer than the control plane at ${older}`,
    ),
  );
  assert.equal((await suite.client.clusterStatus('default', 'kb')).version, version);
  // Put back, the refusal goes.
  await kubectl(
    'patch',
    'kubeadmcontrolplane/kb-control-plane',
    '--type=merge',
    '-p',
    JSON.stringify({ spec: { version } }),
  );
  await until('the refusal to clear', async () =>
    (await clusterObject('kb')).status.conditions.every((c) => c.type !== 'Accepted'),
  );

  // A Machine of the cluster's own, applied with kubectl: made by the cluster workflow, its status written back.
  const lone = join(dir, 'kb-lone.yaml');
  const loneDocs = [
    {
      apiVersion: 'cluster.x-k8s.io/v1beta2',
      kind: 'Machine',
      metadata: { name: 'kb-lone', namespace: 'default' },
      spec: {
        clusterName: 'kb',
        version,
        bootstrap: { configRef: { apiGroup: 'bootstrap.cluster.x-k8s.io', kind: 'KubeadmConfig', name: 'kb-lone' } },
        infrastructureRef: { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: 'LocalMachine', name: 'kb-lone' },
      },
    },
    {
      apiVersion: 'bootstrap.cluster.x-k8s.io/v1beta2',
      kind: 'KubeadmConfig',
      metadata: { name: 'kb-lone', namespace: 'default' },
    },
    {
      apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta2',
      kind: 'LocalMachine',
      metadata: { name: 'kb-lone', namespace: 'default' },
    },
  ];
  await writeFile(lone, loneDocs.map((d) => JSON.stringify(d)).join('\n---\n'));
  const loneApplied = await kubectl('apply', '-f', lone);
  assert.equal(loneApplied.code, 0, loneApplied.stderr);
  const loneObject = await until('the standalone Machine object to show it Running with its Node', async () => {
    const o = await machineObject('kb-lone');
    return o.status?.phase === 'Running' && o.status.nodeRef && o;
  });
  const [loneStatus] = await suite.client.machineStatuses('default', ['kb-lone']);
  assert.equal(loneObject.status.nodeRef!.name, loneStatus!.nodeRef);
  assert.ok(
    (loneObject.status as { conditions?: ApiConditionShape[] }).conditions?.some(
      (c) => c.type === 'Available' && c.status === 'True',
    ),
  );

  // Deletion: the object stays, Deleting, until the workflow has deleted every machine.
  const deleted = await kubectl('delete', 'cluster', 'kb', '--wait=false');
  assert.equal(deleted.code, 0, deleted.stderr);
  const gone = await kubectl('wait', '--for=delete', 'cluster/kb', '--timeout=300s');
  assert.equal(gone.code, 0, `${gone.stderr}\n${bridgeLog()}`);
  const closed = await h.env.client.workflow.getHandle('cluster/default/kb').describe();
  assert.equal(closed.status.name, 'COMPLETED');
  assert.deepEqual(await readdir(machinesDir(clusterDir('default', 'kb'))).catch(() => []), []);
});
