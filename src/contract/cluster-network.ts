/** Cluster API's defaults for `Cluster.spec.clusterNetwork`, as kubeadm applies them: one place for the literals. */
export const clusterNetworkDefaults = {
  serviceSubnet: '10.96.0.0/12',
  podSubnet: '10.244.0.0/16',
  serviceDomain: 'cluster.local',
} as const;
