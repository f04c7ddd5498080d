import { renderCloudConfig } from './cloud-config-renderer';
import type { ClusterSecrets } from '../../src/contract/cluster-secrets';
import { caCertHash } from '../../src/pki/certificates';
import { clusterNetworkDefaults } from '../../src/contract/cluster-network';
import { clusterPkiFiles } from '../../src/pki/cluster-pki';
import { clusterSecrets } from '../secrets/cluster-secrets-lookup';
import type { BootstrapDataRequest } from '../../src/contract/bootstrap-request';

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
 * Renders the machine's user-data. Machines of earlier owners call it as a local activity and hand the result to
 * the provider's create-machine activity; newer ones have the provider's provisioning call render it itself
 * (provisionBootstrappedMachine), so it never enters a history. The secrets are asked fresh: user-data made from a
 * former cluster of the same name would never join this one.
 */
export async function createBootstrapData(req: BootstrapDataRequest): Promise<string> {
  return renderBootstrapData(req, (await clusterSecrets(req.namespace, req.cluster, { fresh: true })).secrets);
}
