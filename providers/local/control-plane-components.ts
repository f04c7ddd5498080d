import { join } from 'node:path';
import type { ProcessSpec } from '../../src/util/processes';

/**
 * Command lines for the static control-plane components of one machine, laid out as kubeadm lays out a
 * node (etc/kubernetes/pki, etc/kubernetes/*.conf, var/lib/etcd) under the machine's root.
 */
export interface ControlPlaneLayout {
  /** The machine's root directory; every path below is inside it. */
  root: string;
  /** The loopback address the machine's components listen on. */
  ip: string;
  ports: ControlPlanePorts;
  /** Directory holding kube-apiserver, kube-controller-manager and kube-scheduler of the machine's version. */
  kubernetesBin: string;
  etcdBinary: string;
  /** etcd member name; kubeadm uses the node name. */
  nodeName: string;
  /** `name=peerURL` pairs of every member, this one included. */
  etcdInitialCluster: string;
  etcdClusterState: 'new' | 'existing';
  serviceSubnet: string;
  podSubnet: string;
  serviceDomain: string;
  /** ClusterConfiguration's extraArgs by component: they replace kubeadm's flag of the same name, or add one. */
  extraArgs?: Partial<Record<ControlPlaneComponent, Record<string, string>>>;
}

export interface ControlPlanePorts {
  etcdClient: number;
  etcdPeer: number;
  apiserver: number;
  controllerManager: number;
  scheduler: number;
}

/** kubeadm's standard ports, usable as is when every machine has a loopback address of its own. */
export const standardPorts: ControlPlanePorts = {
  etcdClient: 2379,
  etcdPeer: 2380,
  apiserver: 6443,
  controllerManager: 10257,
  scheduler: 10259,
};

/** The static components of a control-plane machine, by the names their processes are recorded under. */
export const controlPlaneComponents = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler'] as const;
export type ControlPlaneComponent = (typeof controlPlaneComponents)[number];
export const isControlPlaneComponent = (name: string): name is ControlPlaneComponent =>
  (controlPlaneComponents as readonly string[]).includes(name);

/** Components exit when etcd is briefly unavailable (a member joining); like the kubelet with static pods, they are started again. */
const staticPodRestartSeconds = 3;

/** `--name=value` flags with `extra` replacing those of the same name (as kubeadm merges extraArgs), then the rest of `extra`. */
export function withExtraArgs(args: string[], extra: Record<string, string> = {}): string[] {
  const nameOf = (flag: string) => flag.slice(2).split('=', 1)[0]!;
  const own = new Set(args.map(nameOf));
  return [
    ...args.map((flag) => (nameOf(flag) in extra ? `--${nameOf(flag)}=${extra[nameOf(flag)]}` : flag)),
    ...Object.entries(extra)
      .filter(([name]) => !own.has(name))
      .map(([name, value]) => `--${name}=${value}`),
  ];
}

/** A component kubeadm would run as a static pod: restarted when it exits. */
const staticPod = (
  l: ControlPlaneLayout,
  name: ControlPlaneComponent,
  command: string,
  stateDir: string,
  args: string[],
): ProcessSpec => ({
  name,
  command,
  stateDir,
  restartAfterSeconds: staticPodRestartSeconds,
  args: withExtraArgs(args, l.extraArgs?.[name]),
});

/** How long the node controller waits for a Node's heartbeat before it marks the Node's Ready condition Unknown. */
export const nodeMonitorGraceSeconds = 20;

/** The controller-manager and scheduler serve on the machine's address and reach the apiserver with their own kubeconfig. */
const servingFlags = (l: ControlPlaneLayout, port: number, kubeconfig: string) => [
  `--bind-address=${l.ip}`,
  `--secure-port=${port}`,
  `--kubeconfig=${kubeconfig}`,
  `--authentication-kubeconfig=${kubeconfig}`,
  `--authorization-kubeconfig=${kubeconfig}`,
  '--leader-elect=true',
];

export const pkiDir = (root: string) => join(root, 'etc/kubernetes/pki');
export const kubeconfigPath = (root: string, name: 'admin' | 'controller-manager' | 'scheduler' | 'kubelet') =>
  join(root, `etc/kubernetes/${name}.conf`);
export const etcdPeerUrl = (ip: string, port: number) => `https://${ip}:${port}`;
export const etcdClientUrl = (ip: string, port: number) => `https://${ip}:${port}`;

export function etcdProcess(l: ControlPlaneLayout, stateDir: string): ProcessSpec {
  const pki = join(pkiDir(l.root), 'etcd');
  return staticPod(l, 'etcd', l.etcdBinary, stateDir, [
    `--name=${l.nodeName}`,
    `--data-dir=${join(l.root, 'var/lib/etcd')}`,
    `--listen-client-urls=${etcdClientUrl(l.ip, l.ports.etcdClient)}`,
    `--advertise-client-urls=${etcdClientUrl(l.ip, l.ports.etcdClient)}`,
    `--listen-peer-urls=${etcdPeerUrl(l.ip, l.ports.etcdPeer)}`,
    `--initial-advertise-peer-urls=${etcdPeerUrl(l.ip, l.ports.etcdPeer)}`,
    `--initial-cluster=${l.etcdInitialCluster}`,
    `--initial-cluster-state=${l.etcdClusterState}`,
    `--cert-file=${pki}/server.crt`,
    `--key-file=${pki}/server.key`,
    `--trusted-ca-file=${pki}/ca.crt`,
    '--client-cert-auth=true',
    `--peer-cert-file=${pki}/peer.crt`,
    `--peer-key-file=${pki}/peer.key`,
    `--peer-trusted-ca-file=${pki}/ca.crt`,
    '--peer-client-cert-auth=true',
    '--snapshot-count=10000',
    // Local clusters are disposable; skipping fsync keeps hundreds of machines affordable on one disk.
    '--unsafe-no-fsync=true',
  ]);
}

export function apiserverProcess(l: ControlPlaneLayout, stateDir: string): ProcessSpec {
  const pki = pkiDir(l.root);
  return staticPod(l, 'kube-apiserver', join(l.kubernetesBin, 'kube-apiserver'), stateDir, [
    `--advertise-address=${l.ip}`,
    `--bind-address=${l.ip}`,
    `--secure-port=${l.ports.apiserver}`,
    `--etcd-servers=${etcdClientUrl(l.ip, l.ports.etcdClient)}`,
    `--etcd-cafile=${pki}/etcd/ca.crt`,
    `--etcd-certfile=${pki}/apiserver-etcd-client.crt`,
    `--etcd-keyfile=${pki}/apiserver-etcd-client.key`,
    `--client-ca-file=${pki}/ca.crt`,
    `--tls-cert-file=${pki}/apiserver.crt`,
    `--tls-private-key-file=${pki}/apiserver.key`,
    `--kubelet-client-certificate=${pki}/apiserver-kubelet-client.crt`,
    `--kubelet-client-key=${pki}/apiserver-kubelet-client.key`,
    `--service-account-key-file=${pki}/sa.pub`,
    `--service-account-signing-key-file=${pki}/sa.key`,
    `--service-account-issuer=https://kubernetes.default.svc.${l.serviceDomain}`,
    `--service-cluster-ip-range=${l.serviceSubnet}`,
    '--authorization-mode=Node,RBAC',
    '--enable-admission-plugins=NodeRestriction',
    '--allow-privileged=true',
    `--requestheader-client-ca-file=${pki}/front-proxy-ca.crt`,
    `--proxy-client-cert-file=${pki}/front-proxy-client.crt`,
    `--proxy-client-key-file=${pki}/front-proxy-client.key`,
    '--requestheader-allowed-names=front-proxy-client',
    '--requestheader-extra-headers-prefix=X-Remote-Extra-',
    '--requestheader-group-headers=X-Remote-Group',
    '--requestheader-username-headers=X-Remote-User',
    // Endpoints may not hold loopback addresses, and every local machine has one; nothing in a local cluster needs them.
    '--endpoint-reconciler-type=none',
    '--enable-bootstrap-token-auth=true',
  ]);
}

export function controllerManagerProcess(
  l: ControlPlaneLayout,
  stateDir: string,
  extraArgs: readonly string[] = [],
): ProcessSpec {
  const pki = pkiDir(l.root);
  return staticPod(l, 'kube-controller-manager', join(l.kubernetesBin, 'kube-controller-manager'), stateDir, [
    ...servingFlags(l, l.ports.controllerManager, kubeconfigPath(l.root, 'controller-manager')),
    `--client-ca-file=${pki}/ca.crt`,
    `--requestheader-client-ca-file=${pki}/front-proxy-ca.crt`,
    `--root-ca-file=${pki}/ca.crt`,
    `--service-account-private-key-file=${pki}/sa.key`,
    `--cluster-signing-cert-file=${pki}/ca.crt`,
    `--cluster-signing-key-file=${pki}/ca.key`,
    `--cluster-cidr=${l.podSubnet}`,
    `--service-cluster-ip-range=${l.serviceSubnet}`,
    '--allocate-node-cidrs=true',
    '--use-service-account-credentials=true',
    '--controllers=*,bootstrapsigner,tokencleaner',
    // A Node whose kubelet stopped turns Unknown after 20 s rather than the default 50 s: two missed Lease
    // renewals (every 10 s), so health checks and their tests see a dead machine sooner.
    `--node-monitor-grace-period=${nodeMonitorGraceSeconds}s`,
    ...extraArgs,
  ]);
}

export function schedulerProcess(l: ControlPlaneLayout, stateDir: string): ProcessSpec {
  return staticPod(
    l,
    'kube-scheduler',
    join(l.kubernetesBin, 'kube-scheduler'),
    stateDir,
    servingFlags(l, l.ports.scheduler, kubeconfigPath(l.root, 'scheduler')),
  );
}
