import { deleteSecret, getSecret, putSecret, type SecretRef } from '../../src/secrets/secret-store';
import { renderCloudConfig } from './cloud-config-renderer';
import { type BootstrapRole } from '../../src/contract/machine';
import { clusterPki, clusterSecretRefs } from './cluster-secrets';
import type { KubeadmConfigSpec } from '../../src/contract/kubeadm-config-spec';

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
  spec: KubeadmConfigSpec;
}

export const bootstrapDataRef = (namespace: string, machine: string): SecretRef => ({ secret: `machines/${namespace}/${machine}/bootstrap-data` });

/** Renders the machine's cloud-init user-data into the secret store (overwriting is idempotent) and returns its reference. */
export async function createBootstrapData(req: BootstrapDataRequest): Promise<SecretRef> {
  const refs = clusterSecretRefs(req.namespace, req.cluster);
  const userData = renderCloudConfig(req.role, req.spec, {
    clusterName: req.cluster, kubernetesVersion: req.kubernetesVersion, controlPlaneEndpoint: req.controlPlaneEndpoint,
    serviceSubnet: req.serviceSubnet ?? req.spec.clusterConfiguration?.networking?.serviceSubnet ?? '10.96.0.0/12',
    podSubnet: req.podSubnet ?? req.spec.clusterConfiguration?.networking?.podSubnet ?? '10.244.0.0/16',
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
