import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import type { ApplicationFailure } from '@temporalio/common';
import { after, before, test } from 'node:test';
import { connect } from 'node:tls';
import { promisify } from 'node:util';
import { listMembers, removeMember } from '../../src/etcd/etcd-client';
import { clusterEtcdClientTLS } from '../../src/etcd/etcd-client-tls';
import { LocalProvider } from '../../providers/local/local-provider';
import { joinWorker } from '../../providers/local/kubeadm/worker-join';
import { caCertHash, createCertificateAuthority } from '../../src/pki/certificates';
import {
  clusterDir,
  clusterKubeconfigPath,
  clusterRunDir,
  machineDir,
  machineRoot,
} from '../../providers/local/layout';
import { runningPid } from '../../src/util/processes';
import { availableKubernetesVersions, kubectlFor } from '../../src/tools';
import { LocalClusterDriver } from '../fixtures/local-cluster';
import { listening, processesMentioning } from '../fixtures/leaks';
import { until } from '../fixtures/until';

const run = promisify(execFile);
const version = availableKubernetesVersions().at(-1)!;
let home: string;
let driver: LocalClusterDriver;
let kubeconfigFile: string;
const provider = new LocalProvider();

async function kubectlJson(...args: string[]) {
  const { stdout } = await run(kubectlFor(version), ['--kubeconfig', kubeconfigFile, ...args, '-o', 'json']);
  return JSON.parse(stdout);
}

async function readyNodes(): Promise<{ name: string; providerID: string; version: string }[]> {
  const list = await kubectlJson('get', 'nodes');
  return list.items
    .filter((n: { status: { conditions?: { type: string; status: string }[] } }) =>
      n.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
    )
    .map(
      (n: {
        metadata: { name: string };
        spec: { providerID: string };
        status: { nodeInfo: { kubeletVersion: string } };
      }) => ({ name: n.metadata.name, providerID: n.spec.providerID, version: n.status.nodeInfo.kubeletVersion }),
    );
}

before(async () => {
  home = await mkdtemp(join(tmpdir(), 'capt-home-'));
  process.env.CAPT_HOME = home;
  driver = new LocalClusterDriver(provider, 'default', 'alpha', version);
  await driver.create();
  kubeconfigFile = join(home, 'alpha.kubeconfig');
  await writeFile(kubeconfigFile, driver.kubeconfig(), { mode: 0o600 });
});

after(async () => {
  await provider.deleteCluster('default', 'alpha');
  await rm(home, { recursive: true, force: true });
});

test('one control-plane and two worker machines: kubectl shows three Ready nodes whose providerIDs match the machines', async () => {
  const machines = [
    await driver.machine('alpha-cp-0', 'init', {
      clusterConfiguration: { apiServer: { certSANs: ['api.capt.example', '10.1.2.3'] } },
    }),
  ];
  assert.deepEqual(await driver.bootstrapResult('alpha-cp-0'), { state: 'succeeded' });
  // ClusterConfiguration apiServer.certSANs reach the apiserver's certificate, as kubeadm puts them there.
  const sans = await new Promise<string>((resolve, reject) => {
    const socket = connect({ host: machines[0]!.addresses[0]!, port: 6443, rejectUnauthorized: false }, () => {
      resolve(socket.getPeerCertificate().subjectaltname ?? '');
      socket.end();
    });
    socket.on('error', reject);
  });
  assert.match(sans, /DNS:api\.capt\.example/);
  assert.match(sans, /IP Address:10\.1\.2\.3/);
  machines.push(await driver.machine('alpha-md-0', 'join'), await driver.machine('alpha-md-1', 'join'));
  for (const name of ['alpha-md-0', 'alpha-md-1'])
    assert.deepEqual(await driver.bootstrapResult(name), { state: 'succeeded' });
  const nodes = await until('three Ready nodes', async () => {
    const ready = await readyNodes();
    return ready.length === 3 ? ready : undefined;
  });
  assert.deepEqual(nodes.map((n) => n.providerID).sort(), machines.map((m) => m.providerID).sort());
  assert.ok(
    nodes.every((n) => n.version === version),
    `every kubelet reports ${version}`,
  );
  // Each worker's TLS bootstrap: its kubelet's client certificate, asked for with the bootstrap token, approved and
  // signed by the cluster's controller-manager, is kept with its key where a kubelet keeps it, for its owner only.
  const clusterCA = new X509Certificate(driver.secrets.ca.cert);
  for (const name of ['alpha-md-0', 'alpha-md-1']) {
    const file = join(
      machineRoot(machineDir(clusterDir('default', 'alpha'), name)),
      'var/lib/kubelet/pki/kubelet-client-current.pem',
    );
    // The certificate follows the join in the background, once the controller-manager signed it.
    const pem = await until(`${name}'s kubelet client certificate`, () =>
      readFile(file, 'utf8').catch(() => undefined),
    );
    const cert = new X509Certificate(pem);
    assert.equal(cert.subject, `O=system:nodes\nCN=system:node:${name}`);
    assert.ok(cert.verify(clusterCA.publicKey), `${name}'s certificate is signed by the cluster CA`);
    assert.ok(cert.checkPrivateKey(createPrivateKey(pem)), `${name}'s key is the certificate's`);
    assert.equal((await stat(file)).mode & 0o777, 0o600);
  }
  const csrs = (await kubectlJson('get', 'csr')).items as {
    spec: { signerName: string; username: string };
    status: { conditions?: { type: string }[] };
  }[];
  assert.deepEqual(
    csrs.map((c) => [
      c.spec.signerName,
      c.spec.username.split(':').slice(0, 2).join(':'),
      c.status.conditions?.[0]?.type,
    ]),
    [
      ['kubernetes.io/kube-apiserver-client-kubelet', 'system:bootstrap', 'Approved'],
      ['kubernetes.io/kube-apiserver-client-kubelet', 'system:bootstrap', 'Approved'],
    ],
  );
  // Idempotent create: asking again returns the same machine, boots nothing again and starts no process.
  const mdir = machineDir(clusterDir('default', 'alpha'), 'alpha-md-0');
  const processesBefore = (await processesMentioning([mdir])).map((p) => p.pid).sort();
  const again = await driver.machine('alpha-md-0', 'join');
  assert.deepEqual(
    [again.providerID, again.addresses, again.createdAt],
    [machines[1]!.providerID, machines[1]!.addresses, machines[1]!.createdAt],
  );
  assert.deepEqual(
    (await processesMentioning([mdir])).map((p) => p.pid).sort(),
    processesBefore,
    'no second set of processes',
  );
  const boots = (await readFile(join(machineRoot(mdir), 'var/log/capt-boots.log'), 'utf8')).trim().split('\n');
  assert.equal(boots.length, 1, `cloud-init ran once: ${boots.join(', ')}`);
  // The cluster stands in for other hosts: its agent (the kubelets) and its machines' processes yield the CPU to
  // the management plane sharing this host.
  const agent = await runningPid(clusterRunDir(clusterDir('default', 'alpha')), 'cluster-agent');
  const [apiserver] = await processesMentioning([`--advertise-address=${machines[0]!.addresses[0]} `]);
  assert.ok(agent && apiserver, `the agent (${agent}) and the control plane's kube-apiserver run`);
  // nice adds to the caller's niceness, at most 19.
  const below = Math.min((await niceness(process.pid)) + 10, 19);
  assert.deepEqual([await niceness(agent), await niceness(apiserver.pid)], [below, below]);
});

/** A process's nice value, field 19 of /proc/PID/stat (counted after its parenthesised name). */
async function niceness(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
}

test("a Node the node lifecycle controller marked Unknown while its kubelet reports is Ready again within seconds, as a real kubelet's (it reads its Node; it would post status only every 5 minutes otherwise)", async () => {
  const now = new Date().toISOString();
  const unknown = {
    status: {
      conditions: [
        {
          type: 'Ready',
          status: 'Unknown',
          reason: 'NodeStatusUnknown',
          message: 'Kubelet stopped posting node status.',
          lastHeartbeatTime: now,
          lastTransitionTime: now,
        },
      ],
    },
  };
  const since = Date.now();
  const { stdout } = await run(kubectlFor(version), [
    ...['--kubeconfig', kubeconfigFile, 'patch', 'node', 'alpha-md-1', '--subresource=status'],
    ...['--type=strategic', '-p', JSON.stringify(unknown), '-o', 'json'],
  ]);
  const patched = JSON.parse(stdout) as { status: { conditions: { type: string; status: string }[] } };
  assert.equal(patched.status.conditions.find((c) => c.type === 'Ready')?.status, 'Unknown', 'the patch marked it');
  await until('alpha-md-1 Ready again', async () => (await readyNodes()).some((n) => n.name === 'alpha-md-1'), {
    timeoutMs: 60_000,
    intervalMs: 500,
  });
  console.log(`alpha-md-1 Ready again ${((Date.now() - since) / 1000).toFixed(1)} s after it was marked Unknown`);
});

test('a worker join checks the cluster CA: a configuration pinning another CA, or an endpoint the pinned CA did not sign, is refused', async () => {
  const metadata = JSON.stringify({
    name: 'alpha-md-x',
    ip: '127.0.0.1',
    providerID: 'local://x',
    kubernetesVersion: version,
  });
  const config = (pins: string[]) =>
    [
      'apiVersion: kubeadm.k8s.io/v1beta3',
      'kind: JoinConfiguration',
      'discovery:',
      '  bootstrapToken:',
      `    apiServerEndpoint: ${driver.endpoint}`,
      `    token: ${driver.secrets.bootstrapToken}`,
      `    caCertHashes: ${JSON.stringify(pins)}`,
    ].join('\n');
  const stranger = await createCertificateAuthority('another-cluster');
  await assert.rejects(
    joinWorker(config([caCertHash(stranger.cert)]), metadata, driver.secrets.ca.cert),
    /caCertHashes does not pin this cluster's CA \(sha256:[0-9a-f]{64}\)/,
  );
  await assert.rejects(
    joinWorker(config([caCertHash(stranger.cert)]), metadata, stranger.cert),
    /did not present a certificate of the pinned cluster CA/,
  );
  const joined = await joinWorker(config([caCertHash(driver.secrets.ca.cert)]), metadata, driver.secrets.ca.cert);
  assert.equal(joined.nodeName, 'alpha-md-x', 'the right pin and CA join');
});

test('a second control-plane machine joins etcd; once its member is removed (the control plane workflow does that, see cluster/control-plane.test), deleting it removes its processes', async () => {
  const joined = await driver.machine('alpha-cp-1', 'join-control-plane');
  assert.deepEqual(await driver.bootstrapResult('alpha-cp-1'), { state: 'succeeded' });
  const tls = await clusterEtcdClientTLS(driver.secrets);
  const first = (await provider.describeMachine(driver.ref('alpha-cp-0')))!.addresses[0]!;
  const members = await listMembers(`https://${first}:2379`, tls);
  assert.deepEqual(members.map((m) => m.name).sort(), ['alpha-cp-0', 'alpha-cp-1']);
  const ip = joined.addresses[0]!;
  assert.ok(
    (await processesMentioning([`--bind-address=${ip} `])).length >= 3,
    'the joined machine runs its own apiserver, controller-manager and scheduler',
  );

  // The provider deletes machines, not etcd members: as the control plane workflow does first, the test removes it.
  // etcd refuses removals until the new member has been connected for a few seconds ("unhealthy cluster").
  await until(
    'etcd to accept the member removal',
    () => removeMember(`https://${first}:2379`, members.find((m) => m.name === 'alpha-cp-1')!.id, tls).then(() => true),
    { timeoutMs: 60_000 },
  );
  await provider.deleteMachine(driver.ref('alpha-cp-1'));
  assert.deepEqual(
    (await listMembers(`https://${first}:2379`, tls)).map((m) => m.name),
    ['alpha-cp-0'],
  );
  assert.deepEqual(await processesMentioning([`${ip}:`, `=${ip} `]), [], 'no process of the deleted machine remains');
  assert.equal(await listening(ip, 6443), false);
  assert.equal(existsSync(machineDir(clusterDir('default', 'alpha'), 'alpha-cp-1')), false);
  assert.equal(await provider.describeMachine(driver.ref('alpha-cp-1')), undefined);
  await provider.deleteMachine(driver.ref('alpha-cp-1')); // deleting what is gone succeeds
});

test('a failing preKubeadmCommand leaves no sentinel, and the check reports the command and its output', async () => {
  await driver.machine('alpha-bad', 'join', {
    preKubeadmCommands: ['echo preparing', 'echo "disk /dev/sdz not found" >&2; exit 3', 'echo never runs'],
  });
  const result = await driver.bootstrapResult('alpha-bad');
  assert.equal(result.state, 'failed');
  assert.ok(result.state === 'failed');
  assert.equal(result.command, 'echo "disk /dev/sdz not found" >&2; exit 3');
  assert.equal(result.exitCode, 3);
  assert.match(result.output, /disk \/dev\/sdz not found/);
  const root = machineRoot(machineDir(clusterDir('default', 'alpha'), 'alpha-bad'));
  assert.equal(existsSync(join(root, 'run/cluster-api/bootstrap-success.complete')), false);
  await provider.deleteMachine(driver.ref('alpha-bad'));
});

test('failBootstrap fails the bootstrap and an unknown Kubernetes version is refused with the available ones', async () => {
  await driver.machine('alpha-knob', 'join', {}, { failBootstrap: true });
  const result = await driver.bootstrapResult('alpha-knob');
  assert.equal(result.state, 'failed');
  await provider.deleteMachine(driver.ref('alpha-knob'));
  await assert.rejects(driver.machine('alpha-old', 'join', {}, {}, 'v1.20.0'), (err: Error) => {
    assert.match(
      err.message,
      /Kubernetes v1\.20\.0 is not available on the local provider: it can run v1\.\d+\.\d+, v1\.\d+\.\d+/,
    );
    return true;
  });
  assert.equal(await provider.describeMachine(driver.ref('alpha-old')), undefined, 'nothing was created');
});

test("runcmd is confined: writes to the host /etc and /root land inside the machine, /dev/shm is its own, /usr is read-only, the cluster's kubeconfig hidden", async () => {
  const marker = `capt-escape-${process.pid}`;
  const kubeconfig = clusterKubeconfigPath(clusterDir('default', 'alpha'));
  assert.ok(existsSync(kubeconfig), 'the host holds the kubeconfig the machine must not see');
  await driver.machine('alpha-jail', 'join', {
    preKubeadmCommands: [
      `echo pwned > /etc/${marker}`,
      `echo shared > /dev/shm/${marker}`,
      `if echo x > /usr/${marker}; then exit 10; fi`,
      `echo mine > /root/${marker}`,
      `test ! -e ${kubeconfig}`,
    ],
  });
  assert.deepEqual(await driver.bootstrapResult('alpha-jail'), { state: 'succeeded' });
  assert.equal(existsSync(`/etc/${marker}`), false, 'the host /etc is untouched');
  assert.equal(existsSync(`/dev/shm/${marker}`), false, 'the host /dev/shm is untouched');
  assert.equal(existsSync(`/usr/${marker}`), false);
  assert.equal(existsSync(`/root/${marker}`), false);
  const root = machineRoot(machineDir(clusterDir('default', 'alpha'), 'alpha-jail'));
  assert.equal(await readFile(join(root, 'etc', marker), 'utf8'), 'pwned\n', 'the write landed in the machine');
  assert.equal(await readFile(join(root, 'root', marker), 'utf8'), 'mine\n', "the machine's /root is its own");
});

test("names from a workflow's input are checked where they become paths: '..' and the like are refused, non-retryably, and nothing outside CAPT_HOME is touched", async () => {
  const outside = join(home, '..', `capt-outside-${process.pid}`);
  await mkdir(join(outside, 'machines'), { recursive: true });
  const refusal = (err: ApplicationFailure) => {
    assert.equal(err.type, 'InvalidSpec');
    assert.equal(err.nonRetryable, true);
    assert.match(err.message, /must be a lowercase DNS name/);
    return true;
  };
  await assert.rejects(provider.deleteCluster('..', '..'), refusal);
  await assert.rejects(provider.deleteCluster('default', `../../${basename(outside)}`), refusal);
  await assert.rejects(
    provider.deleteMachine({ namespace: 'default', cluster: 'alpha', name: '../../../..' }),
    refusal,
  );
  await assert.rejects(driver.machine('a/../../b', 'join'), refusal);
  assert.ok(existsSync(join(outside, 'machines')), 'the folder outside is still there');
  assert.ok(existsSync(clusterDir('default', 'alpha')), 'the cluster is still there');
  await rm(outside, { recursive: true, force: true });
});

test('deleting the cluster leaves no process, port or directory behind', async () => {
  const infra = (await provider.describeCluster('default', 'alpha'))!;
  const ips = await Promise.all(
    ['alpha-cp-0', 'alpha-md-0'].map(async (m) => (await provider.describeMachine(driver.ref(m)))!.addresses[0]!),
  );
  assert.ok((await processesMentioning([home])).length > 0, 'the cluster had processes');
  await provider.deleteCluster('default', 'alpha');
  assert.deepEqual(await processesMentioning([home, ...ips.flatMap((ip) => [`${ip}:`, `=${ip} `])]), []);
  assert.equal(await listening(infra.endpoint.host, infra.endpoint.port), false);
  for (const ip of ips) assert.equal(await listening(ip, 6443), false);
  assert.equal(existsSync(clusterDir('default', 'alpha')), false);
});
