import { getSecret } from '../../src/secrets/secret-store';
import { clusterSecretRefs } from '../bootstrap/cluster-secrets';
import { KubeClient } from '../../src/kube/kube-client';

const clients = new Map<string, { kubeconfig: string; client: KubeClient }>();

/**
 * A client for a workload cluster's apiserver, with the admin credentials from the secret store: one per
 * cluster and worker process, so its kept-alive connections serve every activity of the cluster.
 */
export async function workloadClient(namespace: string, cluster: string): Promise<KubeClient> {
  const kubeconfig = await getSecret(clusterSecretRefs(namespace, cluster).adminKubeconfig);
  const key = `${namespace}/${cluster}`;
  const known = clients.get(key);
  // A cluster deleted and created again under its name has new credentials: a new client.
  if (known?.kubeconfig === kubeconfig) return known.client;
  const client = new KubeClient(kubeconfig);
  clients.set(key, { kubeconfig, client });
  return client;
}
