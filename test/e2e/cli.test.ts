import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { connect } from 'node:tls';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import type { V1Node } from '@kubernetes/client-node';
import { KubeClient } from '../../src/kube/kube-client';
import { clusterDir } from '../../providers/local/layout';
import { controlPlaneReplicasProblems, controlPlaneSubject } from '../../src/spec-rules/owner-rules';
import { formatSpecProblem } from '../../src/spec-rules/spec-problem';
import { kubectlFor } from '../../src/tools';
import { MachineHarness } from '../fixtures/machine-harness';
import { listening, processesMentioning } from '../fixtures/leaks';
import { payloadText, pemBody } from '../fixtures/history-guard';
import { runCapt } from '../fixtures/capt-cli';
import { kubeconfigCredentials } from '../../src/pki/kubeconfig';

const run = promisify(execFile);
const root = join(__dirname, '../../..');
// The harness gives a real dev server and worker process; every cluster is made through the CLI.
const h = new MachineHarness();

const capt = (...args: string[]) => captIn(h.home, ...args);

/** The CLI with its own CAPT_HOME: `h.home` is the workers'; an empty one is a host that shares only Temporal with them. */
const captIn = (home: string, ...args: string[]) =>
  runCapt({ TEMPORAL_ADDRESS: h.env.address, CAPT_HOME: home }, ...args);

before(() => h.start());
after(() => h.stop());

test('bad input exits 2 with the problem and its place, and submits nothing', async () => {
  const bad = join(h.home, 'bad.yaml');
  await writeFile(
    bad,
    (await import('node:fs'))
      .readFileSync(join(root, 'examples/quickstart.yaml'), 'utf8')
      .replace('replicas: ${CONTROL_PLANE_MACHINE_COUNT:=1}', 'replicas: 2'),
  );
  const r = await capt('apply', '-f', bad, '--var', 'CLUSTER_NAME=nope');
  assert.equal(r.code, 2);
  assert.match(
    r.stderr,
    /bad\.yaml \(document 3\) KubeadmControlPlane\/nope-control-plane at spec\.replicas: 2 replicas cannot keep etcd quorum/,
  );
  const dryBad = await capt('apply', '--dry-run', '-f', bad, '--var', 'CLUSTER_NAME=nope');
  assert.equal(dryBad.code, 2, 'a dry run refuses bad input as apply does');
  assert.equal(dryBad.stderr, r.stderr);
  // A dry run of a new cluster says what would be created, and starts nothing (the list below stays empty).
  const dry = await capt(
    'apply',
    '--dry-run=server',
    '-f',
    join(root, 'examples/quickstart.yaml'),
    '--var',
    'CLUSTER_NAME=nope',
  );
  assert.equal(dry.code, 0, dry.stderr);
  assert.equal(
    dry.stdout,
    [
      'cluster.cluster.x-k8s.io/nope created (dry run)',
      'kubeadmcontrolplane.controlplane.cluster.x-k8s.io/nope-control-plane created (dry run)',
      '  would add 1 machine',
      'machinedeployment.cluster.x-k8s.io/nope-md-0 created (dry run)',
      '  would add 2 machines',
      '',
    ].join('\n'),
  );
  const client = await capt('apply', '--dry-run=client', '-f', join(root, 'examples/quickstart.yaml'));
  assert.equal(client.code, 2);
  assert.match(
    client.stderr,
    /--dry-run=client: capt's dry run asks the running cluster .*use --dry-run or --dry-run=server/,
  );
  const listed = await capt('get', 'clusters', '-A', '-o', 'json');
  assert.equal(listed.code, 0, listed.stderr);
  assert.deepEqual(JSON.parse(listed.stdout).items, [], 'nothing was submitted');
  assert.equal((await capt('frobnicate')).code, 2);
  assert.equal((await capt('scale', 'machinedeployment', 'x', '--replicas', '-1')).code, 2);
});

test('capt apply --wait, get, describe, kubeconfig + kubectl, scale, delete --wait against the real stack', async () => {
  // A services CIDR and DNS domain of its own: both must reach the workload cluster.
  const network = ['--var', 'SERVICE_CIDR=10.100.0.0/16', '--var', 'SERVICE_DOMAIN=fleet.example'];
  const applied = await capt(
    'apply',
    '-f',
    join(root, 'examples/quickstart.yaml'),
    '--var',
    'CLUSTER_NAME=e2e',
    ...network,
    '--wait',
    '--timeout',
    '10m',
  );
  assert.equal(applied.code, 0, applied.stderr);
  assert.match(applied.stdout, /cluster\.cluster\.x-k8s\.io\/e2e created/);
  assert.match(applied.stdout, /machinedeployment\.cluster\.x-k8s\.io\/e2e-md-0 created/);
  assert.match(applied.stdout, /cluster default\/e2e: Provisioned/);

  const again = await capt(
    'apply',
    '-f',
    join(root, 'examples/quickstart.yaml'),
    '--var',
    'CLUSTER_NAME=e2e',
    ...network,
  );
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stdout, /cluster\.cluster\.x-k8s\.io\/e2e unchanged/);
  assert.match(again.stdout, /machinedeployment\.cluster\.x-k8s\.io\/e2e-md-0 unchanged/);
  // Only the MachineDeployment's maxSurge changes: only it is configured, as kubectl would say.
  const surge = join(h.home, 'surge.yaml');
  await writeFile(
    surge,
    readFileSync(join(root, 'examples/quickstart.yaml'), 'utf8').replace('maxSurge: 1', 'maxSurge: 2'),
  );
  const surged = await capt('apply', '-f', surge, '--var', 'CLUSTER_NAME=e2e', ...network);
  assert.equal(surged.code, 0, surged.stderr);
  assert.deepEqual(
    surged.stdout
      .trim()
      .split('\n')
      .filter((l) => / (created|configured|unchanged)$/.test(l)),
    [
      'cluster.cluster.x-k8s.io/e2e unchanged',
      'kubeadmcontrolplane.controlplane.cluster.x-k8s.io/e2e-control-plane unchanged',
      'machinedeployment.cluster.x-k8s.io/e2e-md-0 configured',
    ],
  );
  const moved = await capt(
    'apply',
    '-f',
    surge,
    '--var',
    'CLUSTER_NAME=e2e',
    '--var',
    'SERVICE_CIDR=10.200.0.0/16',
    '--var',
    'SERVICE_DOMAIN=fleet.example',
  );
  assert.equal(moved.code, 2, 'a network change is refused');
  assert.match(
    moved.stderr,
    /Cluster default\/e2e at spec\.clusterNetwork\.services\.cidrBlocks: clusterNetwork cannot change on a running cluster \(serviceSubnet 10\.100\.0\.0\/16 -> 10\.200\.0\.0\/16\)/,
  );
  const movedDry = await capt(
    'apply',
    '--dry-run',
    '-f',
    surge,
    '--var',
    'CLUSTER_NAME=e2e',
    '--var',
    'SERVICE_CIDR=10.200.0.0/16',
    '--var',
    'SERVICE_DOMAIN=fleet.example',
  );
  assert.equal(movedDry.code, 2, "a dry run refuses what the workflow's validator refuses");
  assert.equal(movedDry.stderr, moved.stderr);
  // On this host the loader refuses a version the provider cannot run; from a host without capt's tools (a
  // remote CLI) the manifests are valid on their own, and the cluster workflow's validator refuses the skipped minor version.
  const unrunnable = await capt(
    'apply',
    '-f',
    surge,
    '--var',
    'CLUSTER_NAME=e2e',
    '--var',
    'KUBERNETES_VERSION=v1.38.0',
    ...network,
  );
  assert.equal(unrunnable.code, 2);
  assert.match(
    unrunnable.stderr,
    /KubeadmControlPlane\/e2e-control-plane at spec\.version: Kubernetes v1\.38\.0 is not one the local provider can run/,
  );
  const skipped = await runCapt(
    { TEMPORAL_ADDRESS: h.env.address, CAPT_HOME: h.home, CAPT_TOOLS_DIR: join(h.home, 'no-tools') },
    'apply',
    '-f',
    surge,
    '--var',
    'CLUSTER_NAME=e2e',
    '--var',
    'KUBERNETES_VERSION=v1.38.0',
    ...network,
  );
  assert.equal(skipped.code, 2, 'a skipped minor version is refused');
  assert.match(
    skipped.stderr,
    /KubeadmControlPlane default\/e2e-control-plane at spec\.version: cannot update Kubernetes version from v1\.36\.3 to v1\.38\.0: change one minor version at a time; go to v1\.37\.x first/,
  );

  const clusters = JSON.parse((await capt('get', 'clusters', '-o', 'json')).stdout).items;
  assert.equal(clusters.length, 1);
  assert.equal(clusters[0].name, 'e2e');
  assert.equal(clusters[0].phase, 'Provisioned');
  assert.equal(clusters[0].controlPlane.readyReplicas, 1);
  assert.equal(clusters[0].machineDeployments[0].readyReplicas, 2);
  const table = await capt('get', 'clusters');
  assert.match(table.stdout, /NAMESPACE\s+NAME\s+PHASE\s+VERSION\s+PROVIDER\s+CONTROL PLANE\s+WORKERS\s+AGE/);
  assert.match(table.stdout, /default\s+e2e\s+Provisioned\s+v1\.\d+\.\d+\s+local\s+1\/1\s+2\/2/);
  const machines = machinesOf('e2e', await capt('get', 'machines', '-o', 'json'));
  assert.equal(machines.length, 3);

  // The wide tables add each cluster's endpoint and each machine's address; yaml carries what json does.
  const wideClusters = await capt('get', 'clusters', '-o', 'wide');
  assert.match(wideClusters.stdout, /\sAGE\s+ENDPOINT\s+STEP\n/);
  assert.match(wideClusters.stdout, new RegExp(`\\be2e\\s+Provisioned\\s.*\\s${clusters[0].endpoint}\\s`));
  const wideMachines = (await capt('get', 'machines', '-o', 'wide')).stdout;
  assert.match(wideMachines, /\sVERSION\s+FAILUREDOMAIN\s+ADDRESS\s+STEP\n/);
  for (const m of machines)
    assert.match(wideMachines, new RegExp(`\\b${m.name}\\s.*\\s${m.addresses[0]}\\s`), wideMachines);
  const yamlClusters = parse((await capt('get', 'clusters', '-o', 'yaml')).stdout).items;
  const summary = (c: { name: string; endpoint: string; version: string; controlPlane: { name: string } }) => [
    c.name,
    c.endpoint,
    c.version,
    c.controlPlane.name,
  ];
  assert.deepEqual(yamlClusters.map(summary), clusters.map(summary));
  // The owner listings: each owner with its counts, revision and version.
  const version = clusters[0].version;
  const deployments = await capt('get', 'machinedeployments');
  assert.match(
    deployments.stdout,
    /^NAMESPACE\s+NAME\s+KIND\s+REPLICAS\s+READY\s+UPDATED\s+AVAILABLE\s+REVISION\s+VERSION\s+STEP\n/,
  );
  assert.match(
    deployments.stdout,
    new RegExp(`\\ndefault\\s+e2e-md-0\\s+MachineDeployment\\s+2\\s+2\\s+2\\s+2\\s+1\\s+${version}\\s`),
  );
  const planes = await capt('get', 'kubeadmcontrolplanes');
  assert.match(
    planes.stdout,
    new RegExp(`\\ndefault\\s+e2e-control-plane\\s+KubeadmControlPlane\\s+1\\s+1\\s+1\\s+1\\s+1\\s+${version}\\s`),
  );
  assert.doesNotMatch(planes.stdout, /MachineDeployment/, 'only control planes are listed');

  const described = await capt('describe', 'cluster', 'e2e');
  assert.equal(described.code, 0, described.stderr);
  assert.match(described.stdout, /Cluster\/e2e\s+True/);
  assert.match(described.stdout, /KubeadmControlPlane\/e2e-control-plane \(1\/1/);
  assert.match(described.stdout, /MachineDeployment\/e2e-md-0 \(2\/2/);
  assert.equal((described.stdout.match(/Machine\/e2e-/g) ?? []).length, 3);
  // Every owner workflow runs: a repair finds nothing to rebuild.
  const repair = await capt('repair', 'cluster', 'e2e', '--dry-run');
  assert.equal(repair.code, 0, repair.stderr);
  assert.match(
    repair.stdout,
    /KubeadmControlPlane\/e2e-control-plane\s+kcp\/default\/e2e-control-plane\s+RUNNING\s+1\s+none/,
  );
  assert.match(repair.stdout, /MachineDeployment\/e2e-md-0\s+md\/default\/e2e-md-0\s+RUNNING\s+2\s+none/);
  assert.match(repair.stdout, /every owner workflow is running; nothing to repair/);

  // From another host: the workers certify a key the CLI made, and the key never goes through Temporal (the
  // certificate does, which shows the history is the one searched). The cluster's own secrets are in that
  // history, as the payload codec encrypts them.
  const elsewhere = await mkdtemp(join(tmpdir(), 'capt-elsewhere-'));
  const kubeconfig = await captIn(elsewhere, 'kubeconfig', 'e2e');
  assert.equal(kubeconfig.code, 0, kubeconfig.stderr);
  const credentials = kubeconfigCredentials(kubeconfig.stdout);
  const history = await payloadText(h.env.client.workflow.getHandle('cluster/default/e2e'));
  assert.ok(history.includes(credentials.cert.trim()), 'the certificate was issued through the cluster workflow');
  assert.ok(
    !history.includes(pemBody(credentials.key)),
    "the CLI's private key is not in the cluster workflow history",
  );
  assert.deepEqual(await readdir(elsewhere), [], 'the CLI read and wrote nothing on its host');
  const unknown = await captIn(elsewhere, 'kubeconfig', 'nope');
  await rm(elsewhere, { recursive: true });
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /cluster default\/nope not found/);
  const file = join(h.home, 'e2e.kubeconfig');
  await writeFile(file, kubeconfig.stdout, { mode: 0o600 });
  // The kubectl capt names is built from the cluster's own Kubernetes version, client and server alike.
  const kubectl = /^# kubectl for this cluster's Kubernetes: (\S+)$/m.exec(kubeconfig.stderr)?.[1];
  assert.ok(kubectl, kubeconfig.stderr);
  const versions = JSON.parse((await run(kubectl, ['--kubeconfig', file, 'version', '-o', 'json'])).stdout);
  assert.equal(versions.clientVersion.gitVersion, versions.serverVersion.gitVersion);
  const nodes = JSON.parse((await run(kubectl, ['--kubeconfig', file, 'get', 'nodes', '-o', 'json'])).stdout).items;
  assert.equal(nodes.length, 3);
  assert.ok(
    nodes.every((n: { status: { conditions: { type: string; status: string }[] } }) =>
      n.status.conditions.some((c) => c.type === 'Ready' && c.status === 'True'),
    ),
    'kubectl sees three Ready nodes',
  );
  const service = JSON.parse(
    (await run(kubectl, ['--kubeconfig', file, 'get', 'svc', 'kubernetes', '-o', 'json'])).stdout,
  );
  assert.equal(service.spec.clusterIP, '10.100.0.1', 'the kubernetes Service has its IP from the services CIDR');
  assert.match(
    await apiserverNames(kubeconfig.stdout),
    /DNS:kubernetes\.default\.svc\.fleet\.example\b/,
    "the apiserver certificate names the Service in the cluster's DNS domain",
  );

  const scaled = await capt('scale', 'machinedeployment', 'e2e-md-0', '--replicas', '1', '--wait');
  assert.equal(scaled.code, 0, scaled.stderr);
  assert.match(scaled.stdout, /machinedeployment\/e2e-md-0 successfully rolled out \(revision 1, v\S+\)\ndesired 1, /);
  // --wait returned once the scale was carried out: one worker has already left capt's machines and the Nodes.
  assert.equal(machinesOf('e2e', await capt('get', 'machines', '-o', 'json')).length, 2);
  assert.equal(
    JSON.parse((await run(kubectl, ['--kubeconfig', file, 'get', 'nodes', '-o', 'json'])).stdout).items.length,
    2,
  );
  const even = await capt('scale', 'kubeadmcontrolplane', 'e2e-control-plane', '--replicas', '2');
  assert.equal(even.code, 2);
  // The control plane's scale validator refuses through the very rule the manifest loader applies.
  assert.ok(
    even.stderr.includes(
      formatSpecProblem(controlPlaneReplicasProblems(controlPlaneSubject('default', 'e2e-control-plane'), 2, 1)[0]!),
    ),
    even.stderr,
  );

  // A Machine of its own: the cluster runs it to a Node, and `capt delete machine` takes it away again.
  const lone = join(h.home, 'lone.yaml');
  await writeFile(lone, `${readFileSync(surge, 'utf8')}---\n${standaloneMachine('e2e', 'e2e-lone')}`);
  const applyLone = () =>
    capt('apply', '-f', lone, '--var', 'CLUSTER_NAME=e2e', '--var', 'WORKER_MACHINE_COUNT=1', ...network);
  const loneApplied = await applyLone();
  assert.equal(loneApplied.code, 0, loneApplied.stderr);
  assert.match(loneApplied.stdout, /^machine\.cluster\.x-k8s\.io\/e2e-lone created$/m);
  for (const deadline = Date.now() + 180_000; ; await sleep(1000)) {
    const machine = JSON.parse((await capt('get', 'machines', '-o', 'json')).stdout).items.find(
      (m: { name: string }) => m.name === 'e2e-lone',
    );
    const nodes = JSON.parse((await run(kubectl, ['--kubeconfig', file, 'get', 'nodes', '-o', 'json'])).stdout).items;
    if (
      machine?.phase === 'Running' &&
      nodes.some(
        (n: { metadata: { annotations: Record<string, string> } }) =>
          n.metadata.annotations['cluster.x-k8s.io/machine'] === 'e2e-lone',
      )
    ) {
      assert.equal(machine.labels.role, 'lone');
      break;
    }
    assert.ok(Date.now() < deadline, `the standalone machine runs with a Node: ${machine?.phase}`);
  }
  assert.equal((await capt('delete', 'machine', 'e2e-lone')).code, 0);
  for (const deadline = Date.now() + 180_000; ; await sleep(1000)) {
    const [c] = JSON.parse((await capt('get', 'clusters', '-o', 'json')).stdout).items;
    const nodes = JSON.parse((await run(kubectl, ['--kubeconfig', file, 'get', 'nodes', '-o', 'json'])).stdout).items
      .length;
    if (c.machines.length === 0 && nodes === 2) break;
    assert.ok(Date.now() < deadline, `the standalone machine deleted: ${c.machines.length} left, ${nodes} Nodes`);
  }
  // Its name stays taken while Temporal keeps the machine's closed workflow: applied again, it is not started.
  const reused = await applyLone();
  assert.equal(reused.code, 0, reused.stderr);
  for (const deadline = Date.now() + 60_000; ; await sleep(500)) {
    const [c] = JSON.parse((await capt('get', 'clusters', '-o', 'json')).stdout).items;
    if (
      c.step.includes('Machine e2e-lone not started: a machine of that name existed before; apply it under a new name')
    ) {
      assert.equal(c.machines.length, 0, 'no machine of that name runs again');
      break;
    }
    assert.ok(Date.now() < deadline, `the cluster says why e2e-lone did not start: ${c.step}`);
  }

  const endpoint = clusters[0].endpoint.split(':');
  const deleted = await capt('delete', 'cluster', 'e2e', '--wait', '--timeout', '5m');
  assert.equal(deleted.code, 0, deleted.stderr);
  assert.match(deleted.stdout, /cluster\.cluster\.x-k8s\.io\/e2e deleted/);
  assert.equal(existsSync(clusterDir('default', 'e2e')), false, 'no directory left');
  assert.equal(await listening(endpoint[0], Number(endpoint[1])), false, 'the endpoint port is closed');
  assert.deepEqual(
    await processesMentioning([`${clusterDir('default', 'e2e')} `, `${clusterDir('default', 'e2e')}/`]),
    [],
    'no process left',
  );
  const gone = await capt('describe', 'cluster', 'e2e');
  assert.equal(gone.code, 1, 'a deleted cluster is not found');
  assert.match(gone.stderr, /cluster default\/e2e not found: it was deleted/);
});

/** A Node's Ready condition status. */
const ready = (n: V1Node) => n.status?.conditions?.find((c) => c.type === 'Ready')?.status;

/** The machines of `cluster` in a `capt get machines -o json` answer. */
const machinesOf = (
  cluster: string,
  listed: { stdout: string },
): { name: string; addresses: string[]; version: string; phase: string }[] =>
  JSON.parse(listed.stdout).items.filter((m: { cluster: string }) => m.cluster === cluster);

/** A standalone worker Machine of `cluster` with its KubeadmConfig and LocalMachine, as YAML documents. */
const standaloneMachine = (cluster: string, name: string) => `apiVersion: cluster.x-k8s.io/v1beta2
kind: Machine
metadata:
  name: ${name}
  labels: { role: lone }
spec:
  clusterName: ${cluster}
  version: \${KUBERNETES_VERSION:=v1.36.3}
  bootstrap:
    configRef: { apiGroup: bootstrap.cluster.x-k8s.io, kind: KubeadmConfig, name: ${name} }
  infrastructureRef: { apiGroup: infrastructure.cluster.x-k8s.io, kind: LocalMachine, name: ${name} }
---
apiVersion: bootstrap.cluster.x-k8s.io/v1beta2
kind: KubeadmConfig
metadata:
  name: ${name}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: LocalMachine
metadata:
  name: ${name}
`;

/** What any change to a cluster would move: its machines, its and its owners' generations and revisions, and how many workflows it has. */
async function observed(cluster: string) {
  const json = async (...args: string[]) => JSON.parse((await capt(...args, '-o', 'json')).stdout).items;
  const [c] = (await json('get', 'clusters')).filter((x: { name: string }) => x.name === cluster);
  const owners = [c.controlPlane, ...c.machineDeployments].map(
    (o: { name: string; revision: number; observedGeneration: number; replicas: number }) =>
      `${o.name} revision ${o.revision} observed ${o.observedGeneration} replicas ${o.replicas}`,
  );
  const machines = (await json('get', 'machines'))
    .filter((m: { cluster: string }) => m.cluster === cluster)
    .map((m: { name: string; version: string; phase: string }) => `${m.name} ${m.version} ${m.phase}`)
    .sort() as string[];
  let workflows = 0;
  for await (const _ of h.env.client.workflow.list({ query: `CaptCluster = "${cluster}"` })) workflows++;
  return { generation: c.generation, observedGeneration: c.observedGeneration, owners, machines, workflows };
}

/** The subject alternative names of the certificate the kubeconfig's apiserver presents. */
async function apiserverNames(kubeconfig: string): Promise<string> {
  const server = new URL(/server: (\S+)/.exec(kubeconfig)![1]!);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: server.hostname, port: Number(server.port), rejectUnauthorized: false }, () => {
      resolve(socket.getPeerCertificate().subjectaltname ?? '');
      socket.end();
    });
    socket.once('error', reject);
  });
}

test('a cluster from a ClusterClass topology: its patches reach the Nodes; a version change goes to the control plane, then the workers in topology order (one deferred until its annotation goes); rollout status shows why each waits, --watch follows to the new revision, apply --wait returns once every machine runs it', async () => {
  // The example's topology with a second pool of the same class; in the second file that pool defers upgrades.
  const example = readFileSync(join(root, 'examples/clusterclass-quickstart.yaml'), 'utf8');
  const withSecondPool = (metadata: string) =>
    example.replace(
      '          replicas: ${WORKER_MACHINE_COUNT:=2}\n',
      `          replicas: \${WORKER_MACHINE_COUNT:=2}\n        - class: default-worker\n          name: md-1\n          replicas: 1\n${metadata}`,
    );
  const quickstart = join(h.home, 'two-pools.yaml');
  const deferred = join(h.home, 'two-pools-deferred.yaml');
  await writeFile(quickstart, withSecondPool(''));
  await writeFile(
    deferred,
    withSecondPool(
      '          metadata:\n            annotations:\n              topology.cluster.x-k8s.io/defer-upgrade: ""\n',
    ),
  );
  const vars = (version: string) => [
    '--var',
    'CLUSTER_NAME=up',
    '--var',
    `KUBERNETES_VERSION=${version}`,
    '--var',
    'WORKER_MACHINE_COUNT=1',
  ];
  const [older, newer] = ['v1.35.4', 'v1.36.3'];
  const created = await capt('apply', '-f', quickstart, ...vars(older), '--wait', '--timeout', '10m');
  assert.equal(created.code, 0, created.stderr);
  const file = join(h.home, 'up.kubeconfig');
  await writeFile(file, (await capt('kubeconfig', 'up')).stdout, { mode: 0o600 });
  const kube = new KubeClient(readFileSync(file, 'utf8'));
  // The topology's owners, named by capt as Cluster API's topology controller shapes its names.
  const owners = JSON.parse((await capt('get', 'machinedeployments', '-o', 'json')).stdout).items.filter(
    (o: { cluster: string }) => o.cluster === 'up',
  ) as { name: string }[];
  const [md, md1] = owners.map((o) => o.name).sort() as [string, string];
  assert.match(md, /^up-md-0-[a-z0-9]{5}$/);
  assert.match(md1, /^up-md-1-[a-z0-9]{5}$/);
  const [kcp] = JSON.parse((await capt('get', 'kubeadmcontrolplanes', '-o', 'json')).stdout)
    .items.filter((o: { cluster: string }) => o.cluster === 'up')
    .map((o: { name: string }) => o.name) as string[];
  // The class's nodePoolLabels patch, a template over builtin.machineDeployment.topologyName, labelled the Node.
  const poolLabels = (await kube.listNodes()).map((n) => n.metadata!.labels!['capt.example/pool']).sort();
  assert.deepEqual(poolLabels, ['control-plane', 'md-0', 'md-1']);
  assert.match((await capt('describe', 'cluster', 'up')).stdout, /^Cluster\/up \(ClusterClass quick-start\) /m);
  const serverVersion = async () =>
    JSON.parse((await run(kubectlFor(newer), ['--kubeconfig', file, 'version', '-o', 'json'])).stdout).serverVersion
      .gitVersion as string;
  assert.equal(await serverVersion(), older);

  // The dry run names the machines the upgrade will replace, and those it updates in place, and changes nothing.
  const before = await observed('up');
  const machineNames = before.machines.map((m) => m.split(' ')[0]!);
  const dry = await capt('apply', '--dry-run', '-f', quickstart, ...vars(newer));
  assert.equal(dry.code, 0, dry.stderr);
  assert.equal(
    dry.stdout,
    [
      'cluster.cluster.x-k8s.io/up unchanged (dry run)',
      // The upgrade plan, step by step, before anything moves: one control-plane machine cannot keep the endpoint up.
      '  upgrade plan:',
      `    1. control plane ${older} -> ${newer}: MAY BE UNAVAILABLE; 1 control-plane machine: the endpoint may not answer while it is replaced (3 or more with maxSurge 1 keep it available)`,
      `    2. workers ${older} -> ${newer}: available; MachineDeployments md-0, md-1 in topology order, 1 at a time, each with maxUnavailable 0`,
      `kubeadmcontrolplane.controlplane.cluster.x-k8s.io/${kcp} configured (dry run)`,
      `  would replace 1 machine (not in place: the provider replaces control-plane machines to change their version (a new etcd member joins first)): ${machineNames.find((n) => n.startsWith(`${kcp}-`))}`,
      `machinedeployment.cluster.x-k8s.io/${md} configured (dry run)`,
      `  would update 1 machine in place once the control plane runs ${newer}: ${machineNames.find((n) => n.startsWith(`${md}-`))}`,
      `machinedeployment.cluster.x-k8s.io/${md1} configured (dry run)`,
      `  would update 1 machine in place once the control plane runs ${newer}: ${machineNames.find((n) => n.startsWith(`${md1}-`))}`,
      '',
    ].join('\n'),
  );
  assert.deepEqual(
    await observed('up'),
    before,
    'the dry run changed nothing: same machines, generations, revisions and workflows',
  );
  assert.equal(await serverVersion(), older);

  const upgrading = await capt('apply', '-f', deferred, ...vars(newer));
  assert.equal(upgrading.code, 0, upgrading.stderr);
  // While the control plane upgrades, the workers' new version is held, and the rollout says so.
  for (const deadline = Date.now() + 60_000; ; await sleep(500)) {
    const r = await capt('rollout', 'status', `machinedeployment/${md}`);
    if (
      new RegExp(
        `waiting for rollout to finish[^\\n]*\\n[^]*pending: ${newer} waits until the control plane runs ${newer}`,
      ).test(r.stdout)
    )
      break;
    assert.ok(Date.now() < deadline, `the held worker upgrade shows as pending: ${r.stdout}`);
  }
  // Once the control plane runs it, md-0 takes the new version; md-1's topology defers its upgrade.
  for (const deadline = Date.now() + 300_000; ; await sleep(500)) {
    const r = await capt('rollout', 'status', `machinedeployment/${md1}`);
    if (r.stdout.includes(`pending: ${newer} deferred: its topology has topology.cluster.x-k8s.io/defer-upgrade`))
      break;
    assert.ok(Date.now() < deadline, `md-1 shows its deferred upgrade: ${r.stdout}`);
  }
  const watched = await capt('rollout', 'status', `machinedeployment/${md}`, '--watch', '--timeout', '10m');
  assert.equal(watched.code, 0, watched.stderr);
  assert.match(
    watched.stdout
      .trim()
      .split('\n')
      .filter((l) => /rolled out|waiting/.test(l))
      .at(-1)!,
    new RegExp(`successfully rolled out \\(revision 2, ${newer}\\)`),
  );
  const workers = (await kube.listNodes()).filter((n) => n.metadata!.name!.startsWith('up-md-0-'));
  assert.deepEqual(
    workers.map((n) => n.status!.nodeInfo!.kubeletVersion),
    [newer],
    '--watch returned with the worker on the new version',
  );

  const poolVersions = async () =>
    (await kube.listNodes())
      .map((n) => `${n.metadata!.labels!['capt.example/pool']} ${n.status!.nodeInfo!.kubeletVersion}`)
      .sort();
  assert.deepEqual(
    await poolVersions(),
    [`control-plane ${newer}`, `md-0 ${newer}`, `md-1 ${older}`],
    'md-1 keeps its version while its topology defers the upgrade',
  );
  // Without the annotation md-1 takes its turn; --wait returns once it runs the new version too.
  const upgraded = await capt('apply', '-f', quickstart, ...vars(newer), '--wait', '--timeout', '10m');
  assert.equal(upgraded.code, 0, upgraded.stderr);
  // --wait returned only once everything runs the new version, as the workload cluster itself says.
  assert.equal(await serverVersion(), newer);
  const nodes = await kube.listNodes();
  assert.equal(nodes.length, 3, nodes.map((n) => n.metadata!.name).join(', '));
  assert.deepEqual(
    nodes.map((n) => n.status!.nodeInfo!.kubeletVersion),
    [newer, newer, newer],
  );
  const machines = JSON.parse((await capt('get', 'machines', '-o', 'json')).stdout).items.filter(
    (m: { cluster: string }) => m.cluster === 'up',
  );
  assert.deepEqual(
    machines.map((m: { version: string; phase: string }) => `${m.version} ${m.phase}`),
    [`${newer} Running`, `${newer} Running`, `${newer} Running`],
  );

  // Undo and restart with --wait return once the worker is replaced: the workload cluster already shows it.
  const workerNow = async () => {
    const [machine, ...more] = machinesOf('up', await capt('get', 'machines', '-o', 'json')).filter((m) =>
      m.name.startsWith('up-md-0-'),
    );
    assert.deepEqual(more, [], 'one worker machine, none left over');
    const workerNodes = (await kube.listNodes()).filter((n) => n.metadata!.name!.startsWith('up-md-0-'));
    assert.deepEqual(
      workerNodes.map((n) => [n.metadata!.name, n.status!.nodeInfo!.kubeletVersion, ready(n)]),
      [[machine!.name, machine!.version, 'True']],
      'the Node of that machine, Ready, and no other worker Node',
    );
    return machine!;
  };
  const upgradedWorker = await workerNow();
  const undone = await capt('rollout', 'undo', `machinedeployment/${md}`, '--wait', '--timeout', '5m');
  assert.equal(undone.code, 0, undone.stderr);
  assert.match(
    undone.stdout,
    new RegExp(`rolled back: revision 3, ${older}\\n[^]*successfully rolled out \\(revision 3, ${older}\\)`),
  );
  const undoneWorker = await workerNow();
  assert.notEqual(undoneWorker.name, upgradedWorker.name);
  assert.deepEqual([undoneWorker.version, undoneWorker.phase], [older, 'Running']);
  const restarted = await capt('rollout', 'restart', `machinedeployment/${md}`, '--wait', '--timeout', '5m');
  assert.equal(restarted.code, 0, restarted.stderr);
  assert.match(
    restarted.stdout,
    new RegExp(`restarted: revision 4\\n[^]*successfully rolled out \\(revision 4, ${older}\\)`),
  );
  const restartedWorker = await workerNow();
  assert.notEqual(restartedWorker.name, undoneWorker.name, 'a new machine of the same template');
  assert.equal(restartedWorker.version, older);

  // --revision N prints that one revision whole; a revision the owner no longer has is named with those it has.
  const revision = async (n: number) => {
    const r = await capt('rollout', 'history', `machinedeployment/${md}`, '--revision', String(n));
    assert.equal(r.code, 0, r.stderr);
    return parse(r.stdout);
  };
  const [undoRevision, restartRevision] = [await revision(3), await revision(4)];
  assert.deepEqual(
    [undoRevision.revision, undoRevision.version, undoRevision.cause, undoRevision.template.version],
    [3, older, 'undo to revision 1', older],
  );
  assert.deepEqual(
    [restartRevision.revision, restartRevision.cause, restartRevision.change],
    [4, 'restart', 'same template (restart)'],
  );
  assert.deepEqual(restartRevision.template, undoRevision.template, 'a restart keeps the template');
  const gone = await capt('rollout', 'history', `machinedeployment/${md}`, '--revision', '1');
  assert.equal(gone.code, 2, 'a revision the owner does not have is bad input, as in rollout undo --to-revision');
  assert.match(gone.stderr, new RegExp(`machinedeployment/${md} has no revision 1; revisions: 2, 3, 4`));
  assert.equal((await capt('delete', 'cluster', 'up', '--wait', '--timeout', '5m')).code, 0);
});
