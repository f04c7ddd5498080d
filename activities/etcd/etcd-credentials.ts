import { getSecret } from '../../src/secrets/secret-store';
import { clusterSecretRefs } from '../bootstrap/cluster-secrets';
import { issueCertificate } from '../../src/pki/certificates';
import type { ClusterCertificateAuthorities } from '../../src/pki/cluster-pki';
import type { EtcdTLS } from '../../src/etcd/etcd-client';

/** A short-lived etcd client certificate for capt's own calls to a cluster's etcd (membership, leadership). */
export async function etcdClientTLS(namespace: string, cluster: string): Promise<EtcdTLS> {
  const cas = JSON.parse(await getSecret(clusterSecretRefs(namespace, cluster).pki)) as ClusterCertificateAuthorities;
  const pair = await issueCertificate(cas.etcdCA, { commonName: 'capt-etcd-client', usage: 'client', days: 1 });
  return { ca: cas.etcdCA.cert, ...pair };
}
