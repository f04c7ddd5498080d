import { clusterEtcdClientTLS } from '../../src/etcd/etcd-client-tls';
import type { EtcdTLS } from '../../src/etcd/etcd-client';
import { clusterSecrets } from '../secrets/cluster-secrets-lookup';

/** A short-lived etcd client certificate for capt's own calls to a cluster's etcd (membership, leadership). */
export async function etcdClientTLS(namespace: string, cluster: string): Promise<EtcdTLS> {
  return clusterEtcdClientTLS((await clusterSecrets(namespace, cluster)).secrets);
}
