/** The static components a ClusterConfiguration configures, by its field for each. */
const componentOfField = {
  apiServer: 'kube-apiserver',
  controllerManager: 'kube-controller-manager',
  scheduler: 'kube-scheduler',
} as const;
export type ComponentField = keyof typeof componentOfField;
export type ConfiguredComponent = (typeof componentOfField)[ComponentField];
/** The same, as a list of [field, component] to walk. */
export const configuredComponents = Object.entries(componentOfField) as [ComponentField, ConfiguredComponent][];

/**
 * Flags that tie a component to its machine (its address, ports, certificates, kubeconfigs, etcd and the
 * cluster's networks): capt sets them from the machine and the Cluster, so extraArgs may not replace them.
 */
export const wiredFlags: Record<ConfiguredComponent, readonly string[]> = {
  'kube-apiserver': [
    'advertise-address',
    'bind-address',
    'secure-port',
    'etcd-servers',
    'etcd-cafile',
    'etcd-certfile',
    'etcd-keyfile',
    'client-ca-file',
    'tls-cert-file',
    'tls-private-key-file',
    'kubelet-client-certificate',
    'kubelet-client-key',
    'service-account-key-file',
    'service-account-signing-key-file',
    'service-cluster-ip-range',
    'requestheader-client-ca-file',
    'proxy-client-cert-file',
    'proxy-client-key-file',
    'endpoint-reconciler-type',
  ],
  'kube-controller-manager': [
    'bind-address',
    'secure-port',
    'kubeconfig',
    'authentication-kubeconfig',
    'authorization-kubeconfig',
    'client-ca-file',
    'requestheader-client-ca-file',
    'root-ca-file',
    'service-account-private-key-file',
    'cluster-signing-cert-file',
    'cluster-signing-key-file',
    'cluster-cidr',
    'service-cluster-ip-range',
  ],
  'kube-scheduler': [
    'bind-address',
    'secure-port',
    'kubeconfig',
    'authentication-kubeconfig',
    'authorization-kubeconfig',
  ],
};

/** A flag's name as kubeadm's extraArgs take it: no dashes in front, lower case words joined by dashes. */
export const flagNamePattern = /^[a-z0-9][a-z0-9-]{0,99}$/;

/** The machine paths capt's own tools and code are bound at: a volume mounted over them would break the machine. */
export const reservedMountPaths = ['/run/capt', '/proc', '/sys', '/dev'];
