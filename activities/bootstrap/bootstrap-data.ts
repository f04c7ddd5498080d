import { renderCloudConfig } from './cloud-config-renderer';
import { type BootstrapRole } from '../../src/contract/machine';
import type { ClusterSecrets } from '../../src/contract/cluster-secrets';
import { caCertHash } from '../../src/pki/certificates';
import type { KubeadmConfigSpec } from '../../src/contract/kubeadm-config-spec';
import { clusterNetworkDefaults } from '../../src/contract/cluster-network';
import { clusterPkiFiles } from '../../src/pki/cluster-pki';
import { clusterSecrets } from '../secrets/cluster-secrets-lookup';

/** Input to the bootstrap activity: only names and non-secret facts; the cluster's secrets come from its workflow. */
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

/** The machine's cloud-init user-data: the token always, the cluster's CAs for a control-plane machine. */
export function renderBootstrapData(req: BootstrapDataRequest, secrets: ClusterSecrets): string {
  const networking = req.spec.clusterConfiguration?.networking;
  return renderCloudConfig(req.role, req.spec, {
    clusterName: req.cluster,
    kubernetesVersion: req.kubernetesVersion,
    controlPlaneEndpoint: req.controlPlaneEndpoint,
    serviceSubnet: req.serviceSubnet ?? networking?.serviceSubnet ?? clusterNetworkDefaults.serviceSubnet,
    podSubnet: req.podSubnet ?? networking?.podSubnet ?? clusterNetworkDefaults.podSubnet,
    serviceDomain: req.serviceDomain ?? networking?.dnsDomain ?? clusterNetworkDefaults.serviceDomain,
    token: secrets.bootstrapToken,
    caCertHash: caCertHash(secrets.ca.cert),
    clusterPki: req.role === 'join' ? undefined : clusterPkiFiles(secrets),
  });
}

/**
 * Renders the machine's user-data and returns it to the machine workflow, which hands it to the provider's
 * create-machine activity and keeps it nowhere else. The secrets are asked fresh: user-data made from a
 * former cluster of the same name would never join this one.
 */
export async function createBootstrapData(req: BootstrapDataRequest): Promise<string> {
  return renderBootstrapData(req, (await clusterSecrets(req.namespace, req.cluster, { fresh: true })).secrets);
}
