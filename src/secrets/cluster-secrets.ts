import { randomBytes } from 'node:crypto';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { clusterSecretsQuery } from '../contract/cluster-messages';
import type { AdminClientCredentials, ClusterSecrets, ClusterSecretsAnswer } from '../contract/cluster-secrets';
import { clusterWorkflowId } from '../contract/workflow-ids';
import { clusterSecretsUnavailable } from '../errors';
import { issueCertificate } from '../pki/certificates';
import { createClusterCertificateAuthorities } from '../pki/cluster-pki';
import { kubeconfig } from '../pki/kubeconfig';

/** The identity of a cluster's administrators; system:masters needs no RBAC binding, as in Cluster API's kubeconfig secret. */
export const clusterAdmin = { commonName: 'capt-admin', organizations: ['system:masters'] };

const randomToken = (bytes: number, length: number) => randomBytes(bytes).toString('hex').slice(0, length);

/** New secrets for a cluster: pure generation, nothing stored; the cluster workflow keeps the first it gets. */
export async function generateClusterSecrets(): Promise<ClusterSecrets> {
  const cas = await createClusterCertificateAuthorities();
  const admin = await issueCertificate(cas.ca, { ...clusterAdmin, usage: 'client' });
  return { ...cas, admin, bootstrapToken: `${randomToken(3, 6)}.${randomToken(8, 16)}` };
}

/** The admin kubeconfig of a cluster whose control-plane endpoint is `endpoint` (host:port). */
export function adminKubeconfig(cluster: string, endpoint: string, credentials: AdminClientCredentials): string {
  const { caCert, cert, key } = credentials;
  return kubeconfig({
    clusterName: cluster,
    server: `https://${endpoint}`,
    caCert,
    user: `${cluster}-admin`,
    credentials: { cert, key },
  });
}

/**
 * Asks the cluster workflow for its secrets. A cluster workflow that is missing, cannot answer now or has
 * no secrets yet is a retryable ClusterSecretsUnavailable: nothing here ever creates secrets.
 */
export async function queryClusterSecrets(
  client: Client,
  namespace: string,
  cluster: string,
): Promise<ClusterSecretsAnswer> {
  const id = clusterWorkflowId(namespace, cluster);
  let answer: ClusterSecretsAnswer | undefined;
  try {
    answer = await client.workflow.getHandle(id).query(clusterSecretsQuery);
  } catch (err) {
    const why = err instanceof WorkflowNotFoundError ? 'does not exist' : `did not answer (${(err as Error).message})`;
    throw clusterSecretsUnavailable(
      `cluster ${namespace}/${cluster}'s secrets are unreadable: its workflow ${id} ${why}`,
      err as Error,
    );
  }
  if (!answer)
    throw clusterSecretsUnavailable(
      `cluster ${namespace}/${cluster} has no secrets yet: its workflow ${id} has not created them`,
    );
  return answer;
}
