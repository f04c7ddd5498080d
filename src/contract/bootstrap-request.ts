import type { BootstrapRole } from './machine';
import type { KubeadmConfigSpec } from './kubeadm-config-spec';

/**
 * What a machine's bootstrap data is rendered from: only names and non-secret facts; the cluster's secrets come from
 * its workflow, asked by whichever activity renders it (createBootstrapData, or the provider's provisioning call).
 */
export interface BootstrapDataRequest {
  namespace: string;
  cluster: string;
  machine: string;
  role: BootstrapRole;
  kubernetesVersion: string;
  controlPlaneEndpoint: string;
  serviceSubnet?: string;
  podSubnet?: string;
  serviceDomain?: string;
  spec: KubeadmConfigSpec;
}
