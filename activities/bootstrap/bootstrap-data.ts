import { deleteSecret, getSecret, putSecret, type SecretRef } from '../../src/secrets/secret-store';
import { renderCloudConfig } from './cloud-config-renderer';
import { type BootstrapRole } from '../../src/contract/machine';
import { clusterPki, clusterSecretRefs } from './cluster-secrets';
import type { KubeadmConfigSpec } from '../../src/contract/kubeadm-config-spec';
import { clusterNetworkDefaults } from '../../src/contract/cluster-network';

/** Input to the bootstrap activity: only names and non-secret facts; secrets are looked up by reference. */
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

export const bootstrapDataRef = (namespace: string, machine: string): SecretRef => ({ secret: `machines/${namespace}/${machine}/bootstrap-data` });

/** Renders the machine's cloud-init user-data into the secret store (overwriting is idempotent) and returns its reference. */
export async function createBootstrapData(req: BootstrapDataRequest): Promise<SecretRef> {
  const refs = clusterSecretRefs(req.namespace, req.cluster);
  const networking = req.spec.clusterConfiguration?.networking;
  const userData = renderCloudConfig(req.role, req.spec, {
    clusterName: req.cluster, kubernetesVersion: req.kubernetesVersion, controlPlaneEndpoint: req.controlPlaneEndpoint,
    serviceSubnet: req.serviceSubnet ?? networking?.serviceSubnet ?? clusterNetworkDefaults.serviceSubnet,
    podSubnet: req.podSubnet ?? networking?.podSubnet ?? clusterNetworkDefaults.podSubnet,
    serviceDomain: req.serviceDomain ?? networking?.dnsDomain ?? clusterNetworkDefaults.serviceDomain,
    token: (await getSecret(refs.bootstrapToken)).trim(),
    clusterPki: req.role === 'join' ? undefined : await clusterPki(req.namespace, req.cluster),
  });
  const ref = bootstrapDataRef(req.namespace, req.machine);
  await putSecret(ref, userData);
  return ref;
}

export async function deleteBootstrapData(namespace: string, machine: string): Promise<void> {
  await deleteSecret(bootstrapDataRef(namespace, machine));
}
