import { getSecret } from '../../src/secrets/secret-store';
import { clusterSecretRefs } from '../bootstrap/cluster-secrets';
import { KubeClient } from './kube-client';

/** A client for a workload cluster's apiserver, with the admin credentials from the secret store. */
export async function workloadClient(namespace: string, cluster: string): Promise<KubeClient> {
  return new KubeClient(await getSecret(clusterSecretRefs(namespace, cluster).adminKubeconfig));
}
