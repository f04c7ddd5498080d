import type { CertificateExpiry } from '../../src/contract/certificates';
import { certificateExpiry } from '../../src/pki/certificate-expiry';
import { clusterSecrets } from '../secrets/cluster-secrets-lookup';

/**
 * A cluster's certificate authorities and the admin certificate capt's workers act on it with, from the cluster's
 * own secrets (never from a machine): only their names, subjects and ends leave the worker, no key.
 */
export async function clusterCertificateAuthorities(namespace: string, cluster: string): Promise<CertificateExpiry[]> {
  const { secrets } = await clusterSecrets(namespace, cluster);
  const held: [string, string][] = [
    ['ca', secrets.ca.cert],
    ['etcd-ca', secrets.etcdCA.cert],
    ['front-proxy-ca', secrets.frontProxyCA.cert],
    ['capt-admin', secrets.admin.cert],
  ];
  return held.map(([name, pem]) => certificateExpiry(name, pem)).filter((c): c is CertificateExpiry => !!c);
}
