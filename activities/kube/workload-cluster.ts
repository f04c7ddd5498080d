import { KubeClient } from '../../src/kube/kube-client';
import { clusterAdminKubeconfig } from '../secrets/cluster-secrets-lookup';

const clients = new Map<string, { kubeconfig: string; client: KubeClient }>();

/**
 * A client for a workload cluster's apiserver, with the admin credentials its cluster workflow keeps: one
 * per cluster and worker process, so its kept-alive connections serve every activity of the cluster.
 */
export async function workloadClient(namespace: string, cluster: string): Promise<KubeClient> {
  const kubeconfig = await clusterAdminKubeconfig(namespace, cluster);
  const key = `${namespace}/${cluster}`;
  const known = clients.get(key);
  // A cluster deleted and created again under its name has new credentials: a new client.
  if (known?.kubeconfig === kubeconfig) return known.client;
  const client = new KubeClient(kubeconfig);
  clients.set(key, { kubeconfig, client });
  return client;
}
