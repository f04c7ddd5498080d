import { createPublicKey, randomBytes } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/activity';
import { deleteSecret, getSecret, putSecret, type SecretRef } from '../../src/secrets/secret-store';
import { certifyPublicKey, issueCertificate } from '../../src/pki/certificates';
import { clusterPkiFiles, createClusterCertificateAuthorities, type ClusterCertificateAuthorities } from '../../src/pki/cluster-pki';
import { kubeconfig } from '../../src/pki/kubeconfig';

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

/** The identity of a cluster's administrators; system:masters needs no RBAC binding, as in Cluster API's kubeconfig secret. */
const admin = { commonName: 'capt-admin', organizations: ['system:masters'] };

/** Get-or-create the cluster's secrets; the admin kubeconfig points at `endpoint` (host:port). */
export async function ensureClusterSecrets(namespace: string, cluster: string, endpoint: string): Promise<ClusterSecretRefs> {
  const refs = clusterSecretRefs(namespace, cluster);
  const cas = JSON.parse(await getOrCreate(refs.pki, async () => JSON.stringify(await createClusterCertificateAuthorities()))) as ClusterCertificateAuthorities;
  await getOrCreate(refs.adminKubeconfig, async () => {
    const credentials = await issueCertificate(cas.ca, { ...admin, usage: 'client' });
    return kubeconfig({ clusterName: cluster, server: `https://${endpoint}`, caCert: cas.ca.cert, user: `${cluster}-admin`, credentials });
  });
  await getOrCreate(refs.bootstrapToken, async () => `${randomToken(3, 6)}.${randomToken(8, 16)}`);
  return refs;
}

/**
 * An admin client certificate for `publicKey`, whose private key never leaves the client that asked: the
 * request and this answer go through Temporal's history, and neither holds a secret.
 */
export async function certifyClusterAdmin(namespace: string, cluster: string, publicKey: string): Promise<{ cert: string; caCert: string }> {
  try {
    const key = createPublicKey(publicKey);
    if (key.asymmetricKeyType !== 'ec' && !(key.asymmetricKeyType === 'rsa' && (key.asymmetricKeyDetails?.modulusLength ?? 0) >= 2048)) throw new Error(`a ${key.asymmetricKeyType} key`);
  } catch (err) {
    throw ApplicationFailure.nonRetryable(`the public key to certify is not a PEM EC or RSA (2048 bits or more) public key (${(err as Error).message}); send the SPKI PEM of a new key`, 'InvalidPublicKey');
  }
  const cas = JSON.parse(await getSecret(clusterSecretRefs(namespace, cluster).pki).catch(() => {
    throw ApplicationFailure.nonRetryable(`cluster ${namespace}/${cluster} has no certificate authority in this worker's secret store; it is not created yet or already deleted`, 'ClusterSecretsMissing');
  })) as ClusterCertificateAuthorities;
  return { cert: await certifyPublicKey(cas.ca, publicKey, { ...admin, usage: 'client' }), caCert: cas.ca.cert };
}

export async function clusterPki(namespace: string, cluster: string): Promise<Record<string, string>> {
  return clusterPkiFiles(JSON.parse(await getSecret(clusterSecretRefs(namespace, cluster).pki)) as ClusterCertificateAuthorities);
}

export async function deleteClusterSecrets(namespace: string, cluster: string): Promise<void> {
  for (const ref of Object.values(clusterSecretRefs(namespace, cluster))) await deleteSecret(ref);
}
