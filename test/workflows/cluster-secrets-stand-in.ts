import { condition, setHandler } from '@temporalio/workflow';
import { clusterSecretsQuery } from '../../src/contract/cluster-messages';
import type { ClusterSecrets } from '../../src/contract/cluster-secrets';

/**
 * For a cluster made directly through the provider (the machine harness's base cluster): answers the
 * clusterSecrets query under the cluster workflow's ID, as a cluster workflow does, until terminated.
 */
export async function clusterSecretsStandIn(input: { endpoint: string; secrets: ClusterSecrets }): Promise<void> {
  setHandler(clusterSecretsQuery, () => ({ endpoint: input.endpoint, deleting: false, secrets: input.secrets }));
  await condition(() => false);
}
