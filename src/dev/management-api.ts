import { randomBytes } from 'node:crypto';
import { access, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { captHome } from '../config/capt-home';
import { clusterNetworkDefaults } from '../contract/cluster-network';
import type { EtcdTLS } from '../etcd/etcd-client';
import {
  clusterPkiFiles,
  controlPlaneNodeFiles,
  createClusterCertificateAuthorities,
  soleControlPlaneNode,
  type ClusterCertificateAuthorities,
} from '../pki/cluster-pki';
import { kubeconfigCredentials } from '../pki/kubeconfig';
import { keepOrIssueWebhookClient, type WebhookClient } from '../pki/webhook-client';
import { availableKubernetesVersions, toolPaths } from '../tools';
import { createFileOnce, readJson, writeFileAtomic, writeJsonAtomic, writeTree } from '../util/files';
import { freePort } from '../util/free-port';
import { waitForOk } from '../util/https-probe';
import { isListening } from '../util/listening';
import { logTail, runningPid, startDetached, stopProcess } from '../util/processes';
import {
  apiserverProcess,
  controllerManagerProcess,
  etcdClientUrl,
  etcdPeerUrl,
  etcdProcess,
  kubeconfigPath,
  pkiDir,
  type ControlPlaneLayout,
} from '../../providers/local/control-plane-components';
import { ManagementApi } from '../management-api/api-client';
import { installCrdsAndRoles } from '../management-api/crd-install';
import { admissionConfiguration, webhookClientKubeconfig } from '../management-api/webhook-client-config';

/**
 * capt's management API: a real etcd, kube-apiserver and kube-controller-manager (garbage collection,
 * namespaces, quotas) on loopback, serving Cluster API's CRDs and capt's provider kinds. Everything lives
 * under one folder (kubeadm's layout: etc/kubernetes, var/lib/etcd; pid files and logs in run/), kept across
 * restarts as a Temporal database is; Secrets are encrypted at rest with a key kept with capt's other secrets.
 */

/** Stopped in this order: the controller-manager and apiserver before the etcd they use. */
const components = ['kube-controller-manager', 'kube-apiserver', 'etcd'] as const;
const ip = '127.0.0.1';
const nodeName = 'capt-management';
const clusterName = 'capt';

const runDir = (dir: string) => join(dir, 'run');
const portsFile = (dir: string) => join(dir, 'ports.json');
/** The admin kubeconfig (system:masters) of the management API in `dir`. */
export const adminConf = (dir: string) => kubeconfigPath(dir, 'admin');

/** The apiserver's port at its last start; etcd's ports, chosen once (a member's peer URL is in its data). */
interface Ports {
  apiserver: number;
  etcdClient: number;
  etcdPeer: number;
}

/** The EncryptionConfiguration (it holds the key) beside capt's other secrets: CAPT_HOME/management-api-encryption.yaml. */
export const encryptionConfigFile = () => join(captHome(), 'management-api-encryption.yaml');

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

/**
 * Creates the encryption key once, never over an existing one (losing it loses every Secret): secretbox
 * (XSalsa20-Poly1305), with identity second so data written before encryption stays readable. True when created.
 */
async function ensureEncryptionConfig(): Promise<boolean> {
  const config = {
    apiVersion: 'apiserver.config.k8s.io/v1',
    kind: 'EncryptionConfiguration',
    resources: [
      {
        resources: ['secrets'],
        providers: [
          { secretbox: { keys: [{ name: 'key1', secret: randomBytes(32).toString('base64') }] } },
          { identity: {} },
        ],
      },
    ],
  };
  return createFileOnce(encryptionConfigFile(), stringify(config), 0o600);
}

/** The cluster's authorities, read back from etc/kubernetes/pki; created (whole) on the first start. */
async function certificateAuthorities(dir: string): Promise<ClusterCertificateAuthorities> {
  const pki = pkiDir(dir);
  if (!(await exists(join(pki, 'sa.pub')))) {
    const cas = await createClusterCertificateAuthorities();
    // sa.pub last: its presence says the rest is there.
    const { 'sa.pub': publicKey, ...rest } = clusterPkiFiles(cas);
    await writeTree(pki, rest);
    await writeTree(pki, { 'sa.pub': publicKey! });
    return cas;
  }
  const read = (name: string) => readFile(join(pki, name), 'utf8');
  return {
    ca: { cert: await read('ca.crt'), key: await read('ca.key') },
    etcdCA: { cert: await read('etcd/ca.crt'), key: await read('etcd/ca.key') },
    frontProxyCA: { cert: await read('front-proxy-ca.crt'), key: await read('front-proxy-ca.key') },
    serviceAccount: { privateKey: await read('sa.key'), publicKey: await read('sa.pub') },
  };
}

/** The webhook client's files in etc/kubernetes/pki. */
const webhookClientFiles = {
  ca: { cert: 'webhook-client-ca.crt', key: 'webhook-client-ca.key' },
  client: { cert: 'webhook-client.crt', key: 'webhook-client.key' },
};

/** The authority of the client certificate the apiserver presents to webhooks: the bridge's --webhook-client-ca. */
export const webhookClientCaFile = (dir: string) => join(pkiDir(dir), webhookClientFiles.ca.cert);

/**
 * The client certificate the apiserver presents to the bridge's webhooks, with its authority, kept in
 * etc/kubernetes/pki and renewed as `capt init` renews its own (keys 0600, written atomically); then the
 * AdmissionConfiguration that has the apiserver present it. Its user is `*`, every webhook: the bridge takes a
 * new port at each start, and capt's are the only webhooks registered here. Returns that file's path.
 */
async function webhookClientConfiguration(dir: string): Promise<string> {
  const pki = pkiDir(dir);
  const read = (name: string) => readFile(join(pki, name), 'utf8').catch(() => '');
  const pair = async (names: { cert: string; key: string }) => ({
    cert: await read(names.cert),
    key: await read(names.key),
  });
  const stored: WebhookClient = {
    ca: await pair(webhookClientFiles.ca),
    client: await pair(webhookClientFiles.client),
  };
  const current = await keepOrIssueWebhookClient(stored.ca.cert ? stored : undefined);
  if (current.renewed)
    for (const part of ['ca', 'client'] as const) {
      await writeFileAtomic(join(pki, webhookClientFiles[part].cert), current[part].cert);
      await writeFileAtomic(join(pki, webhookClientFiles[part].key), current[part].key, 0o600);
    }
  const kubeconfigFile = join(dir, 'etc/kubernetes/webhook-client.conf');
  const files = webhookClientFiles.client;
  await writeFileAtomic(
    kubeconfigFile,
    webhookClientKubeconfig('*', join(pki, files.cert), join(pki, files.key)),
    0o600,
  );
  const configFile = join(dir, 'etc/kubernetes/admission-configuration.yaml');
  await writeFileAtomic(configFile, admissionConfiguration(kubeconfigFile));
  return configFile;
}

/** Ports for this start: the apiserver's as asked, etcd's as recorded (else free ones). */
async function choosePorts(dir: string, apiserver: number): Promise<Ports> {
  const recorded = await readJson<Ports>(portsFile(dir));
  return {
    apiserver,
    etcdClient: recorded?.etcdClient ?? (await freePort(ip)),
    etcdPeer: recorded?.etcdPeer ?? (await freePort(ip)),
  };
}

function layout(dir: string, ports: Ports, controllerManager: number): ControlPlaneLayout {
  const tools = toolPaths();
  return {
    root: dir,
    ip,
    ports: { ...ports, controllerManager, scheduler: 0 },
    kubernetesBin: tools.kubernetes[availableKubernetesVersions().at(-1)!]!,
    etcdBinary: tools.etcd,
    nodeName,
    etcdInitialCluster: `${nodeName}=${etcdPeerUrl(ip, ports.etcdPeer)}`,
    etcdClusterState: 'new',
    ...clusterNetworkDefaults,
  };
}

export interface ManagementApiStatus {
  /** The kube-apiserver's pid; undefined when it is not running. */
  pid?: number;
  server?: string;
}

export async function managementApiStatus(dir: string): Promise<ManagementApiStatus> {
  const pid = await runningPid(runDir(dir), 'kube-apiserver');
  const ports = await readJson<Ports>(portsFile(dir));
  return { pid, server: ports && `https://${ip}:${ports.apiserver}` };
}

const withLogs = async (dir: string, err: Error) =>
  new Error(
    `${err.message}\nkube-apiserver log:\n${await logTail(runDir(dir), 'kube-apiserver')}\netcd log:\n${await logTail(runDir(dir), 'etcd')}`,
  );

/**
 * Starts etcd, the apiserver and the controller-manager (each kept running by a restart loop, as static pods
 * are), then creates or updates the CRDs (waiting until they are Established) and the tenant ClusterRoles. What
 * runs already is kept.
 */
export async function startManagementApi(
  dir: string,
  port: number,
  onStep: (line: string) => void,
): Promise<{ server: string; crds: number; applied: number; roles: string[] }> {
  const running = await runningPid(runDir(dir), 'kube-apiserver');
  const ports = running ? (await readJson<Ports>(portsFile(dir)))! : await choosePorts(dir, port);
  const server = `https://${ip}:${ports.apiserver}`;
  if (!running) {
    if (await isListening(ip, ports.apiserver))
      throw new Error(
        `port ${ports.apiserver} is already in use by another program (the management API listens there); stop it, set CAPT_DEV_API_PORT to a free port, or start with --without-management-api`,
      );
    onStep(`starting the management API (kube-apiserver and etcd) on ${server}`);
    if (await ensureEncryptionConfig())
      onStep(
        `created the management API's encryption key ${encryptionConfigFile()}: keep it, the Secrets in its etcd cannot be read without it`,
      );
    const cas = await certificateAuthorities(dir);
    const recorded = await readJson<Ports>(portsFile(dir));
    // The node's certificates and kubeconfigs name the apiserver's address: made again when its port changes.
    if (recorded?.apiserver !== ports.apiserver || !(await exists(adminConf(dir)))) {
      const files = await controlPlaneNodeFiles(cas, soleControlPlaneNode(clusterName, nodeName, ip, ports.apiserver));
      await writeTree(join(dir, 'etc/kubernetes'), files);
    }
    await writeJsonAtomic(portsFile(dir), ports);
    const l = layout(dir, ports, await freePort(ip));
    const etcd = etcdProcess(l, runDir(dir));
    // The objects here are users' desired state, not a disposable local cluster's: etcd syncs its writes.
    await startDetached({ ...etcd, args: etcd.args.filter((a) => a !== '--unsafe-no-fsync=true') });
    const apiserver = apiserverProcess(l, runDir(dir));
    await startDetached({
      ...apiserver,
      args: [
        ...apiserver.args,
        `--encryption-provider-config=${encryptionConfigFile()}`,
        `--admission-control-config-file=${await webhookClientConfiguration(dir)}`,
      ],
    });
    await waitForOk(`${server}/readyz`, kubeconfigCredentials(await managementKubeconfig(dir)), 60_000).catch(
      async (err: Error) => {
        throw await withLogs(dir, err);
      },
    );
    // A quota synced before its CRDs' resources were discovered counts them only at the next full resync (5 minutes by
    // default) while no object of theirs exists yet; a tenant's first Cluster would be refused that long.
    await startDetached(controllerManagerProcess(l, runDir(dir), ['--resource-quota-sync-period=20s']));
  }
  const api = new ManagementApi(server, kubeconfigCredentials(await managementKubeconfig(dir)));
  try {
    return { server, ...(await installCrdsAndRoles(api)) };
  } finally {
    api.close();
  }
}

/** The admin kubeconfig (system:masters), as `kind get kubeconfig` prints one; its key is in no other output. */
export async function managementKubeconfig(dir: string): Promise<string> {
  return readFile(adminConf(dir), 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT')
      throw new Error(`the management API has not been started (${adminConf(dir)} is missing): run \`capt dev start\``);
    throw err;
  });
}

/** etcd's client endpoint and the apiserver's client credentials for it, to read what the apiserver stored. */
export async function managementEtcd(dir: string): Promise<{ endpoint: string; tls: EtcdTLS }> {
  const ports = await readJson<Ports>(portsFile(dir));
  if (!ports) throw new Error(`the management API has not been started (${portsFile(dir)} is missing)`);
  const read = (name: string) => readFile(join(pkiDir(dir), name), 'utf8');
  return {
    endpoint: etcdClientUrl(ip, ports.etcdClient),
    tls: {
      ca: await read('etcd/ca.crt'),
      cert: await read('apiserver-etcd-client.crt'),
      key: await read('apiserver-etcd-client.key'),
    },
  };
}

/** Stops every component; the data, certificates and key stay. */
export async function stopManagementApi(dir: string): Promise<void> {
  for (const name of components) await stopProcess(runDir(dir), name, 15_000);
}
