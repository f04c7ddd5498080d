import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { CertificateExpiry, MachineCertificates, MachineCertificatesPage } from '../../src/contract/certificates';
import { certificateExpiry } from '../../src/pki/certificate-expiry';
import { kubeconfigCredentials } from '../../src/pki/kubeconfig';
import { readJson } from '../../src/util/files';
import { clusterDir, machineDir, machineRecordPath, machineRoot, machinesDir, type LocalMachineRecord } from './layout';
import { readMachineFile } from './machine-files';

/** Where kubeadm leaves each certificate on a machine, by the name `kubeadm certs check-expiration` gives it. */
const certificateFiles: [name: string, path: string][] = [
  ['apiserver', 'etc/kubernetes/pki/apiserver.crt'],
  ['apiserver-kubelet-client', 'etc/kubernetes/pki/apiserver-kubelet-client.crt'],
  ['apiserver-etcd-client', 'etc/kubernetes/pki/apiserver-etcd-client.crt'],
  ['front-proxy-client', 'etc/kubernetes/pki/front-proxy-client.crt'],
  ['etcd-server', 'etc/kubernetes/pki/etcd/server.crt'],
  ['etcd-peer', 'etc/kubernetes/pki/etcd/peer.crt'],
  ['kubelet-client', 'var/lib/kubelet/pki/kubelet-client-current.pem'],
];
/** Kubeconfigs whose embedded client certificate kubeadm lists under the file's name. */
const kubeconfigFiles: [name: string, path: string][] = [
  ['admin.conf', 'etc/kubernetes/admin.conf'],
  ['controller-manager.conf', 'etc/kubernetes/controller-manager.conf'],
  ['scheduler.conf', 'etc/kubernetes/scheduler.conf'],
];
/** Certificates and kubeconfigs are a few KB; a machine's bigger file is read no further than this. */
const maxFileBytes = 64 << 10;

function kubeconfigCertificate(text: string): string | undefined {
  try {
    return kubeconfigCredentials(text).cert;
  } catch {
    return undefined;
  }
}

/** The certificates one machine holds, read as the host reads anything a machine wrote (readMachineFile). */
async function machineCertificates(mdir: string, machine: string): Promise<MachineCertificates> {
  const record = await readJson<LocalMachineRecord>(machineRecordPath(mdir));
  const found: MachineCertificates = { machine, certificates: [], unreadable: [] };
  if (!record) return found;
  const read = async ([name, path]: [string, string], pemOf: (text: string) => string | undefined) => {
    const text = await readMachineFile(join(machineRoot(mdir), path), record.hostId, maxFileBytes);
    if (text === undefined) return;
    const pem = pemOf(text);
    const expiry: CertificateExpiry | undefined = pem === undefined ? undefined : certificateExpiry(name, pem);
    if (expiry) found.certificates.push(expiry);
    else found.unreadable.push(name);
  };
  for (const file of certificateFiles) await read(file, (text) => text);
  for (const file of kubeconfigFiles) await read(file, kubeconfigCertificate);
  return found;
}

/** A page of a cluster's machines (by name, after `after`) with the certificates each holds. */
export async function clusterMachineCertificates(
  namespace: string,
  cluster: string,
  after: string | undefined,
  limit: number,
): Promise<MachineCertificatesPage> {
  const dir = clusterDir(namespace, cluster);
  const names = (await readdir(machinesDir(dir)).catch(() => [] as string[]))
    .sort()
    .filter((n) => after === undefined || n > after);
  const page = names.slice(0, limit);
  const machines: MachineCertificates[] = [];
  for (const name of page) machines.push(await machineCertificates(machineDir(dir, name), name));
  return { machines, ...(names.length > limit ? { next: page.at(-1)! } : {}) };
}
