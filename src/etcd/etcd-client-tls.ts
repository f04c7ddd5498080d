import type { ClusterSecrets } from '../contract/cluster-secrets';
import { issueCertificate } from '../pki/certificates';
import type { EtcdTLS } from './etcd-client';

/** A short-lived etcd client certificate signed by the cluster's etcd CA, for capt's own calls to its etcd. */
export async function clusterEtcdClientTLS(secrets: Pick<ClusterSecrets, 'etcdCA'>): Promise<EtcdTLS> {
  const pair = await issueCertificate(secrets.etcdCA, { commonName: 'capt-etcd-client', usage: 'client', days: 1 });
  return { ca: secrets.etcdCA.cert, ...pair };
}
