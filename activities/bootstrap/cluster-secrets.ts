import { randomBytes } from 'node:crypto';
import { deleteSecret, getSecret, putSecret, type SecretRef } from '../../src/secrets/secret-store';
import { issueCertificate } from '../pki/certificates';
import { clusterPkiFiles, createClusterCertificateAuthorities, type ClusterCertificateAuthorities } from '../pki/cluster-pki';
import { kubeconfig } from '../pki/kubeconfig';

/**
 * The secrets of one workload cluster (its CAs, an admin kubeconfig, a bootstrap token), created once and
 * kept in the secret store. Workflows see only the references returned here.
 */
export interface ClusterSecretRefs {
  pki: SecretRef;
  adminKubeconfig: SecretRef;
  bootstrapToken: SecretRef;
}

export const clusterSecretRefs = (namespace: string, cluster: string): ClusterSecretRefs => ({
  pki: { secret: `clusters/${namespace}/${cluster}/pki.json` },
  adminKubeconfig: { secret: `clusters/${namespace}/${cluster}/admin.kubeconfig` },
  bootstrapToken: { secret: `clusters/${namespace}/${cluster}/bootstrap-token` },
});

async function getOrCreate(ref: SecretRef, create: () => Promise<string>): Promise<string> {
  try {
    return await getSecret(ref);
  } catch {
    const value = await create();
    await putSecret(ref, value);
    return value;
  }
}

const randomToken = (bytes: number, length: number) => randomBytes(bytes).toString('hex').slice(0, length);

/** Get-or-create the cluster's secrets; the admin kubeconfig points at `endpoint` (host:port). */
export async function ensureClusterSecrets(namespace: string, cluster: string, endpoint: string): Promise<ClusterSecretRefs> {
  const refs = clusterSecretRefs(namespace, cluster);
  const cas = JSON.parse(await getOrCreate(refs.pki, async () => JSON.stringify(await createClusterCertificateAuthorities()))) as ClusterCertificateAuthorities;
  await getOrCreate(refs.adminKubeconfig, async () => {
    const admin = await issueCertificate(cas.ca, { commonName: 'capt-admin', organizations: ['system:masters'], usage: 'client' });
    return kubeconfig({ clusterName: cluster, server: `https://${endpoint}`, caCert: cas.ca.cert, user: `${cluster}-admin`, credentials: admin });
  });
  await getOrCreate(refs.bootstrapToken, async () => `${randomToken(3, 6)}.${randomToken(8, 16)}`);
  return refs;
}

export async function clusterPki(namespace: string, cluster: string): Promise<Record<string, string>> {
  return clusterPkiFiles(JSON.parse(await getSecret(clusterSecretRefs(namespace, cluster).pki)) as ClusterCertificateAuthorities);
}

export async function deleteClusterSecrets(namespace: string, cluster: string): Promise<void> {
  for (const ref of Object.values(clusterSecretRefs(namespace, cluster))) await deleteSecret(ref);
}
