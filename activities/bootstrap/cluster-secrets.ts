import { createPublicKey } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/activity';
import type { ClusterSecrets } from '../../src/contract/cluster-secrets';
import { certifyPublicKey } from '../../src/pki/certificates';
import { clusterAdmin, generateClusterSecrets } from '../../src/secrets/cluster-secrets';
import { clusterSecrets } from '../secrets/cluster-secrets-lookup';

/**
 * New secrets for a cluster (its CAs, capt's admin credentials, a bootstrap token), returned to the cluster
 * workflow, which keeps the first result it records; a retry's unused secrets are simply dropped.
 */
export async function createClusterSecrets(): Promise<ClusterSecrets> {
  return generateClusterSecrets();
}

/**
 * An admin client certificate for `publicKey`, whose private key never leaves the client that asked: the
 * request and this answer go through Temporal's history, and neither holds a secret.
 */
export async function certifyClusterAdmin(
  namespace: string,
  cluster: string,
  publicKey: string,
): Promise<{ cert: string; caCert: string }> {
  try {
    const key = createPublicKey(publicKey);
    if (
      key.asymmetricKeyType !== 'ec' &&
      !(key.asymmetricKeyType === 'rsa' && (key.asymmetricKeyDetails?.modulusLength ?? 0) >= 2048)
    )
      throw new Error(`a ${key.asymmetricKeyType} key`);
  } catch (err) {
    throw ApplicationFailure.nonRetryable(
      `the public key to certify is not a PEM EC or RSA (2048 bits or more) public key (${(err as Error).message}); send the SPKI PEM of a new key`,
      'InvalidPublicKey',
    );
  }
  const { ca } = (await clusterSecrets(namespace, cluster)).secrets;
  return { cert: await certifyPublicKey(ca, publicKey, { ...clusterAdmin, usage: 'client' }), caCert: ca.cert };
}
