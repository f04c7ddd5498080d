import { createCertificateAuthority, issueCertificate, newServiceAccountKeyPair, type KeyPair } from './certificates';
import { clusterNetworkDefaults } from '../contract/cluster-network';
import { kubeconfig } from './kubeconfig';

/** The cluster-wide secrets kubeadm creates once per cluster and copies to every control-plane machine. */
export interface ClusterCertificateAuthorities {
  ca: KeyPair;
  etcdCA: KeyPair;
  frontProxyCA: KeyPair;
  serviceAccount: { privateKey: string; publicKey: string };
}

export async function createClusterCertificateAuthorities(): Promise<ClusterCertificateAuthorities> {
  const [ca, etcdCA, frontProxyCA] = await Promise.all([
    createCertificateAuthority('kubernetes'),
    createCertificateAuthority('etcd-ca'),
    createCertificateAuthority('front-proxy-ca'),
  ]);
  return { ca, etcdCA, frontProxyCA, serviceAccount: newServiceAccountKeyPair() };
}

/** The files of etc/kubernetes/pki that hold the cluster-wide secrets (what Cluster API stores as cluster secrets). */
export function clusterPkiFiles(cas: ClusterCertificateAuthorities): Record<string, string> {
  return {
    'ca.crt': cas.ca.cert,
    'ca.key': cas.ca.key,
    'etcd/ca.crt': cas.etcdCA.cert,
    'etcd/ca.key': cas.etcdCA.key,
    'front-proxy-ca.crt': cas.frontProxyCA.cert,
    'front-proxy-ca.key': cas.frontProxyCA.key,
    'sa.key': cas.serviceAccount.privateKey,
    'sa.pub': cas.serviceAccount.publicKey,
  };
}

export interface ControlPlaneNode {
  clusterName: string;
  nodeName: string;
  /** The machine's own address: components listen on it. */
  ip: string;
  apiserverPort: number;
  /** The address clients use: the control-plane endpoint; it goes into the serving cert's SANs. */
  endpointHost: string;
  endpointPort: number;
  /** First address of the service subnet (the `kubernetes` Service). */
  serviceIP: string;
  /** The cluster's DNS domain (clusterNetwork.serviceDomain): the Service's full name is in the SANs. */
  serviceDomain: string;
  /** ClusterConfiguration apiServer.certSANs: more names and addresses the apiserver's certificate carries. */
  certSANs?: string[];
}

/** One node that is its own control-plane endpoint on `ip`, with Cluster API's default service network. */
export const soleControlPlaneNode = (
  clusterName: string,
  nodeName: string,
  ip: string,
  apiserverPort: number,
): ControlPlaneNode => ({
  clusterName,
  nodeName,
  ip,
  apiserverPort,
  endpointHost: ip,
  endpointPort: apiserverPort,
  serviceIP: '10.96.0.1',
  serviceDomain: clusterNetworkDefaults.serviceDomain,
});

/**
 * What `kubeadm init phase certs` and `phase kubeconfig` produce on one control-plane machine: per-machine
 * leaf certificates under etc/kubernetes/pki and the component kubeconfigs under etc/kubernetes.
 */
export async function controlPlaneNodeFiles(
  cas: ClusterCertificateAuthorities,
  node: ControlPlaneNode,
): Promise<Record<string, string>> {
  const dnsNames = [
    'kubernetes',
    'kubernetes.default',
    'kubernetes.default.svc',
    `kubernetes.default.svc.${node.serviceDomain}`,
    'localhost',
    node.nodeName,
  ];
  const extra = node.certSANs ?? [];
  const ips = [
    ...new Set([
      node.ip,
      node.serviceIP,
      '127.0.0.1',
      ...(isIP(node.endpointHost) ? [node.endpointHost] : []),
      ...extra.filter((s) => isIP(s)),
    ]),
  ];
  if (!isIP(node.endpointHost)) dnsNames.push(node.endpointHost);
  dnsNames.push(...extra.filter((s) => !isIP(s) && !dnsNames.includes(s)));
  const [
    apiserver,
    kubeletClient,
    etcdClient,
    frontProxyClient,
    etcdServer,
    etcdPeer,
    controllerManager,
    scheduler,
    admin,
  ] = await Promise.all([
    issueCertificate(cas.ca, { commonName: 'kube-apiserver', dnsNames, ipAddresses: ips, usage: 'server' }),
    issueCertificate(cas.ca, {
      commonName: 'kube-apiserver-kubelet-client',
      organizations: ['system:masters'],
      usage: 'client',
    }),
    issueCertificate(cas.etcdCA, { commonName: 'kube-apiserver-etcd-client', usage: 'client' }),
    issueCertificate(cas.frontProxyCA, { commonName: 'front-proxy-client', usage: 'client' }),
    issueCertificate(cas.etcdCA, {
      commonName: node.nodeName,
      dnsNames: ['localhost', node.nodeName],
      ipAddresses: [node.ip, '127.0.0.1'],
      usage: 'server+client',
    }),
    issueCertificate(cas.etcdCA, {
      commonName: node.nodeName,
      dnsNames: ['localhost', node.nodeName],
      ipAddresses: [node.ip, '127.0.0.1'],
      usage: 'server+client',
    }),
    issueCertificate(cas.ca, { commonName: 'system:kube-controller-manager', usage: 'client' }),
    issueCertificate(cas.ca, { commonName: 'system:kube-scheduler', usage: 'client' }),
    issueCertificate(cas.ca, { commonName: 'kubernetes-admin', organizations: ['system:masters'], usage: 'client' }),
  ]);
  // Components on the machine talk to their own apiserver, as kubeadm's static pods do.
  const local = `https://${node.ip}:${node.apiserverPort}`;
  const conf = (user: string, credentials: KeyPair, server: string) =>
    kubeconfig({ clusterName: node.clusterName, server, caCert: cas.ca.cert, user, credentials });
  return {
    ...Object.fromEntries(
      Object.entries({
        apiserver,
        'apiserver-kubelet-client': kubeletClient,
        'apiserver-etcd-client': etcdClient,
        'front-proxy-client': frontProxyClient,
        'etcd/server': etcdServer,
        'etcd/peer': etcdPeer,
      }).flatMap(([name, pair]) => [
        [`pki/${name}.crt`, pair.cert],
        [`pki/${name}.key`, pair.key],
      ]),
    ),
    'controller-manager.conf': conf('system:kube-controller-manager', controllerManager, local),
    'scheduler.conf': conf('system:kube-scheduler', scheduler, local),
    'admin.conf': conf('kubernetes-admin', admin, `https://${node.endpointHost}:${node.endpointPort}`),
  };
}

function isIP(host: string): boolean {
  return /^\d+\.\d+\.\d+\.\d+$/.test(host);
}
