import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { join as joinPath } from 'node:path';
import { addLearner, listMembers, promoteMember, type EtcdTLS } from '../../../src/etcd/etcd-client';
import { KubeClient } from '../../../src/kube/kube-client';
import { controlPlaneNodeFiles, type ClusterCertificateAuthorities } from '../../../src/pki/cluster-pki';
import { issueCertificate, type KeyPair } from '../../../src/pki/certificates';
import { kubeconfigCredentials } from '../../../src/pki/kubeconfig';
import { writeTree } from '../../../src/util/files';
import {
  apiserverProcess,
  controllerManagerProcess,
  etcdPeerUrl,
  etcdProcess,
  schedulerProcess,
  standardPorts,
  type ControlPlaneLayout,
} from '../control-plane-components';
import { metadataPathInMachine, stateDirInMachine, type MachineMetadata } from '../machine-metadata';
import { startDetached, stopProcess } from '../../../src/util/processes';
import { httpsGet, waitForOk } from '../../../src/util/https-probe';
import { parseKubeadmConfig, splitHostPort, type KubeadmDocuments, type NodeRegistration } from './kubeadm-config';
import { checkToken, joinEndpoint, KubeadmError, kubeletRegistration } from './worker-join';
import { clusterNetworkDefaults } from '../../../src/contract/cluster-network';
import { configuredComponents } from '../../../src/contract/control-plane-flags';
import { mountComponentVolumes } from './component-volumes';
import { nodeBootstrappers } from './kubelet-tls-bootstrap';

/**
 * capt's kubeadm for local machines: `kubeadm init|join [--control-plane] --config FILE` run from the
 * machine's bootstrap data inside its sandbox. It does what kubeadm does that matters to Cluster API:
 * certificates and kubeconfigs, etcd membership, the control-plane components, the bootstrap token, and
 * the kubelet's registration.
 */
const pki = '/etc/kubernetes/pki';

function usage(): never {
  throw new KubeadmError('usage: kubeadm init --config FILE | kubeadm join [--control-plane] --config FILE');
}

/** The cluster CA certificate the bootstrap data wrote, which discovery checks the endpoint against. */
const readClusterCA = () =>
  readFile(joinPath(pki, 'ca.crt'), 'utf8').catch((): string => {
    throw new KubeadmError(
      `${joinPath(pki, 'ca.crt')} is missing: the bootstrap data must write the cluster CA for a machine that joins here`,
    );
  });

async function readCAs(): Promise<ClusterCertificateAuthorities> {
  const read = (p: string) =>
    readFile(joinPath(pki, p), 'utf8').catch((): string => {
      throw new KubeadmError(
        `${joinPath(pki, p)} is missing: the bootstrap data must write the cluster certificate authorities for a control-plane machine`,
      );
    });
  const [caCert, caKey, etcdCert, etcdKey, fpCert, fpKey, saKey, saPub] = await Promise.all(
    [
      'ca.crt',
      'ca.key',
      'etcd/ca.crt',
      'etcd/ca.key',
      'front-proxy-ca.crt',
      'front-proxy-ca.key',
      'sa.key',
      'sa.pub',
    ].map(read),
  );
  return {
    ca: { cert: caCert!, key: caKey! },
    etcdCA: { cert: etcdCert!, key: etcdKey! },
    frontProxyCA: { cert: fpCert!, key: fpKey! },
    serviceAccount: { privateKey: saKey!, publicKey: saPub! },
  };
}

function layoutFor(
  meta: MachineMetadata,
  docs: KubeadmDocuments,
  initialCluster: string,
  state: 'new' | 'existing',
): ControlPlaneLayout {
  return {
    root: '/',
    ip: meta.ip,
    ports: standardPorts,
    kubernetesBin: meta.kubernetesBin,
    etcdBinary: meta.etcdBinary,
    nodeName: meta.name,
    etcdInitialCluster: initialCluster,
    etcdClusterState: state,
    ...networkingOf(docs),
    extraArgs: Object.fromEntries(
      configuredComponents.map(([field, component]) => [component, docs.cluster?.[field]?.extraArgs ?? {}]),
    ),
  };
}

/** The ClusterConfiguration's networking, kubeadm's defaults where it is silent. */
function networkingOf(docs: KubeadmDocuments): { serviceSubnet: string; podSubnet: string; serviceDomain: string } {
  const n = docs.cluster?.networking;
  return {
    serviceSubnet: n?.serviceSubnet ?? clusterNetworkDefaults.serviceSubnet,
    podSubnet: n?.podSubnet ?? clusterNetworkDefaults.podSubnet,
    serviceDomain: n?.dnsDomain ?? clusterNetworkDefaults.serviceDomain,
  };
}

function firstServiceIP(subnet: string): string {
  const [a, b, c, d] = subnet.split('/')[0]!.split('.').map(Number) as [number, number, number, number];
  return `${a}.${b}.${c}.${d + 1}`;
}

async function writeControlPlaneFiles(
  meta: MachineMetadata,
  docs: KubeadmDocuments,
  endpoint: { host: string; port: number },
  cas: ClusterCertificateAuthorities,
): Promise<void> {
  const files = await controlPlaneNodeFiles(cas, {
    clusterName: docs.cluster?.clusterName ?? 'kubernetes',
    nodeName: meta.name,
    ip: meta.ip,
    apiserverPort: standardPorts.apiserver,
    endpointHost: endpoint.host,
    endpointPort: endpoint.port,
    serviceIP: firstServiceIP(networkingOf(docs).serviceSubnet),
    serviceDomain: networkingOf(docs).serviceDomain,
    certSANs: docs.cluster?.apiServer?.certSANs ?? [],
  });
  await writeTree('/etc/kubernetes', files);
}

/**
 * A control-plane node's kubelet client certificate, from the cluster CA it holds (kubeadm init puts it in
 * kubelet.conf), kept where a bootstrapped kubelet keeps its own, as a worker's is.
 */
async function writeKubeletClientCertificate(nodeName: string, ca: KeyPair): Promise<void> {
  const pair = await issueCertificate(ca, {
    commonName: `system:node:${nodeName}`,
    organizations: ['system:nodes'],
    usage: 'client',
  });
  await mkdir('/var/lib/kubelet/pki', { recursive: true });
  await writeFile('/var/lib/kubelet/pki/kubelet-client-current.pem', pair.cert + pair.key, { mode: 0o600 });
}

/** Starts the machine's components; `beforeApiserver` runs once etcd is started (a joining member's promotion). */
async function startComponents(
  layout: ControlPlaneLayout,
  docs: KubeadmDocuments,
  cas: ClusterCertificateAuthorities,
  adminConf: string,
  beforeApiserver = async () => {},
): Promise<KubeClient> {
  // Before anything starts: a volume that cannot be mounted fails the machine before etcd has a member more.
  await mountComponentVolumes(docs);
  await startDetached(etcdProcess(layout, stateDirInMachine));
  await beforeApiserver();
  await startDetached(apiserverProcess(layout, stateDirInMachine));
  const admin = { ...kubeconfigCredentials(adminConf), ca: cas.ca.cert };
  await waitForOk(`https://${layout.ip}:${layout.ports.apiserver}/readyz`, admin, 120_000);
  await startDetached(controllerManagerProcess(layout, stateDirInMachine));
  await startDetached(schedulerProcess(layout, stateDirInMachine));
  // Ready once every component is, as kubeadm waits for all of them: the control plane's preflight before its
  // next step, which checks them too, then passes at once instead of failing and retrying 10 s later.
  await Promise.all(
    [layout.ports.controllerManager, layout.ports.scheduler].map((port) =>
      waitForOk(`https://${layout.ip}:${port}/healthz`, { insecure: true }, 120_000),
    ),
  );
  return new KubeClient(adminConf.replace(/server: .*/, `server: https://${layout.ip}:${layout.ports.apiserver}`));
}

async function registerKubelet(
  meta: MachineMetadata,
  registration: NodeRegistration | undefined,
  controlPlane: boolean,
): Promise<void> {
  await mkdir('/var/lib/kubelet', { recursive: true });
  await writeFile(
    '/var/lib/kubelet/config.json',
    JSON.stringify(kubeletRegistration(meta, registration, controlPlane), null, 2),
  );
}

async function init(meta: MachineMetadata, docs: KubeadmDocuments): Promise<void> {
  const wanted = docs.cluster?.kubernetesVersion;
  if (wanted && wanted !== meta.kubernetesVersion) {
    throw new KubeadmError(
      `ClusterConfiguration.kubernetesVersion is ${wanted} but this machine runs ${meta.kubernetesVersion}`,
    );
  }
  const endpoint = splitHostPort(docs.cluster?.controlPlaneEndpoint ?? `${meta.ip}:6443`);
  const cas = await readCAs();
  await writeControlPlaneFiles(meta, docs, endpoint, cas);
  await writeKubeletClientCertificate(kubeletRegistration(meta, docs.init?.nodeRegistration, true).nodeName, cas.ca);
  const layout = layoutFor(meta, docs, `${meta.name}=${etcdPeerUrl(meta.ip, standardPorts.etcdPeer)}`, 'new');
  const client = await startComponents(layout, docs, cas, await readFile('/etc/kubernetes/admin.conf', 'utf8'));
  for (const { token } of docs.init?.bootstrapTokens ?? []) await createBootstrapToken(client, token);
  // kube-public is created by the apiserver's own controller shortly after it is ready.
  await patiently(() =>
    client.ensureConfigMap({
      metadata: { name: 'cluster-info', namespace: 'kube-public' },
      data: { 'ca.crt': cas.ca.cert, endpoint: `${endpoint.host}:${endpoint.port}` },
    }),
  );
  await registerKubelet(meta, docs.init?.nodeRegistration, true);
}

async function createBootstrapToken(client: KubeClient, token: string): Promise<void> {
  const match = /^([a-z0-9]{6})\.([a-z0-9]{16})$/.exec(token);
  if (!match)
    throw new KubeadmError(
      `bootstrap token '${token.slice(0, 6)}…' is malformed: it must match [a-z0-9]{6}.[a-z0-9]{16}`,
    );
  await patiently(() =>
    client.ensureSecret({
      metadata: { name: `bootstrap-token-${match[1]}`, namespace: 'kube-system' },
      type: 'bootstrap.kubernetes.io/token',
      stringData: {
        'token-id': match[1]!,
        'token-secret': match[2]!,
        'usage-bootstrap-authentication': 'true',
        'usage-bootstrap-signing': 'true',
        'auth-extra-groups': nodeBootstrappers,
      },
    }),
  );
}

async function joinCluster(meta: MachineMetadata, docs: KubeadmDocuments, controlPlane: boolean): Promise<void> {
  const endpoint = joinEndpoint(docs);
  // The bootstrap data wrote the cluster CA for every machine (kubeadm keeps it in pki/ca.crt).
  await checkToken(endpoint, docs.join?.discovery?.bootstrapToken, await readClusterCA());
  if (controlPlane) {
    const cas = await readCAs();
    await writeControlPlaneFiles(meta, docs, splitHostPort(endpoint), cas);
    await writeKubeletClientCertificate(kubeletRegistration(meta, docs.join?.nodeRegistration, true).nodeName, cas.ca);
    const etcdClient = await issueCertificate(cas.etcdCA, { commonName: `${meta.name}-join`, usage: 'client' });
    const tls: EtcdTLS = { ca: cas.etcdCA.cert, ...etcdClient };
    const admin = new KubeClient(await readFile('/etc/kubernetes/admin.conf', 'utf8'));
    // Right after a member joined, etcd may answer no one for a moment: wait that out as kubeadm does.
    const peers = await patiently(async () => etcdMemberURL(await admin.controlPlaneAddresses(), tls));
    const selfURL = etcdPeerUrl(meta.ip, standardPorts.etcdPeer);
    const { member, members } = await addLearnerPatiently(peers, selfURL, tls);
    const initialCluster = members.map((m) => `${m.name || meta.name}=${m.peerURLs[0]}`).join(',');
    const layout = layoutFor(meta, docs, initialCluster, 'existing');
    // Promoted once in sync, before its apiserver starts: the cluster never counted it before it could vote.
    await startComponents(layout, docs, cas, await readFile('/etc/kubernetes/admin.conf', 'utf8'), async () => {
      await restartIfPublishLost(layout, tls);
      await patiently(() => promoteMember(peers, member.id, tls), 120_000);
    });
  }
  await registerKubelet(meta, docs.join?.nodeRegistration, controlPlane);
}

/**
 * A new member's etcd proposes its name and client URLs to the leader as it starts, and serves no client until
 * that is applied. The leader then sends it a snapshot (etcd 3.6 does for every new member), whose restore
 * resets the peer connections: the proposal is lost, and etcd retries it only after its 7 s request timeout.
 * A learner that has its snapshot and still serves no one is restarted, which proposes again at once; a
 * learner does not vote, so its restart costs the cluster nothing.
 */
async function restartIfPublishLost(layout: ControlPlaneLayout, tls: EtcdTLS): Promise<void> {
  const url = `https://${layout.ip}:${layout.ports.etcdClient}/health`;
  // Any answer at all: etcd accepts client connections only once it has published itself.
  const serving = () =>
    httpsGet(url, tls, 200).then(
      () => true,
      () => false,
    );
  const snapshotSaved = async () =>
    (await readdir(joinPath(layout.root, 'var/lib/etcd/member/snap')).catch(() => [] as string[])).some((f) =>
      f.endsWith('.snap'),
    );
  // A publish that follows the snapshot is applied within milliseconds; this leaves it ample time.
  const graceMs = 500;
  let savedAt: number | undefined;
  for (const deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(100)) {
    if (await serving()) return;
    if (savedAt === undefined && (await snapshotSaved())) savedAt = Date.now();
    if (savedAt !== undefined && Date.now() - savedAt >= graceMs) {
      process.stderr.write('kubeadm: etcd did not publish itself after its snapshot; restarting it\n');
      await stopProcess(stateDirInMachine, 'etcd');
      await startDetached(etcdProcess(layout, stateDirInMachine));
      return;
    }
  }
}

/**
 * etcd refuses a new member ("unhealthy cluster") until the last one added has been connected for a few
 * seconds, and a second learner while one is learning; kubeadm waits that out rather than fail the join.
 */
async function addLearnerPatiently(endpoint: string, peerURL: string, tls: EtcdTLS): ReturnType<typeof addLearner> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      return await addLearner(endpoint, peerURL, tls);
    } catch (err) {
      if (!/unhealthy cluster|too many learner|not started/i.test((err as Error).message) || Date.now() > deadline)
        throw err;
      // A refusal ends at a moment etcd knows to the millisecond; a short retry joins soon after it.
      await sleep(250);
    }
  }
}

/** Retries `work` every second for up to `timeoutMs` (transient API and etcd errors); the last error after that. */
async function patiently<T>(work: () => Promise<T>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await work();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      process.stderr.write(`kubeadm: ${(err as Error).message.split('\n')[0]}; retrying\n`);
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

/** A client URL of a current etcd member: stacked etcd runs on every control-plane machine. */
async function etcdMemberURL(controlPlaneIPs: string[], tls: EtcdTLS): Promise<string> {
  const candidates = controlPlaneIPs.map((ip) => `https://${ip}:${standardPorts.etcdClient}`);
  for (const url of candidates) {
    try {
      await listMembers(url, tls);
      return url;
    } catch {
      // An apiserver that is going away may have lost its etcd already; try the next one.
    }
  }
  throw new KubeadmError(
    `no etcd member answered among ${candidates.join(', ') || '(no control-plane Node is registered)'}`,
  );
}

async function main(): Promise<void> {
  const [command, ...rest] = process.argv.slice(2);
  const configIndex = rest.indexOf('--config');
  if (configIndex < 0 || !rest[configIndex + 1]) usage();
  const docs = parseKubeadmConfig(await readFile(rest[configIndex + 1]!, 'utf8'));
  const meta = JSON.parse(await readFile(metadataPathInMachine, 'utf8')) as MachineMetadata;
  if (command === 'init') await init(meta, docs);
  else if (command === 'join') await joinCluster(meta, docs, rest.includes('--control-plane'));
  else usage();
  process.stdout.write(`kubeadm ${command}: node ${meta.name} ready\n`);
}

main().catch((err: Error) => {
  process.stderr.write(`kubeadm: ${err.message}\n`);
  process.exitCode = 1;
});
