import { Context } from '@temporalio/activity';
import { adminClientCredentials, type ClusterSecretsAnswer } from '../../src/contract/cluster-secrets';
import { adminKubeconfig, queryClusterSecrets } from '../../src/secrets/cluster-secrets';

/**
 * How long an answer serves later activities of this worker. Short: a cluster deleted and created again
 * under its name has new secrets, and a client with stale ones must not outlive this by much.
 */
const cacheMs = 10_000;

const answers = new Map<string, { at: number; settled: boolean; answer: Promise<ClusterSecretsAnswer> }>();

/**
 * A cluster's secrets for the running activity, asked of its cluster workflow with the activity's own
 * client, so no worker keeps them on disk. Concurrent asks share one query; a failed query is not kept
 * and fails the activity with a retryable ClusterSecretsUnavailable. `fresh` (for anything that makes
 * lasting artefacts from the CAs, as bootstrap data) shares a query in flight but never takes an older
 * answer. An answer of a cluster being deleted is not kept either.
 */
export function clusterSecrets(
  namespace: string,
  cluster: string,
  opts: { fresh?: boolean } = {},
): Promise<ClusterSecretsAnswer> {
  const key = `${namespace}/${cluster}`;
  const known = answers.get(key);
  if (known && (!known.settled || (!opts.fresh && Date.now() - known.at < cacheMs))) return known.answer;
  const entry = {
    at: Date.now(),
    settled: false,
    answer: queryClusterSecrets(Context.current().client, namespace, cluster),
  };
  answers.set(key, entry);
  const settle = (keep: boolean) => {
    entry.settled = true;
    if (!keep && answers.get(key) === entry) answers.delete(key);
  };
  entry.answer.then(
    (a) => settle(!a.deleting),
    () => settle(false),
  );
  return entry.answer;
}

/** The admin kubeconfig of the cluster, as its secrets and endpoint say. */
export async function clusterAdminKubeconfig(namespace: string, cluster: string): Promise<string> {
  const { endpoint, secrets } = await clusterSecrets(namespace, cluster);
  return adminKubeconfig(cluster, endpoint, adminClientCredentials(secrets));
}
