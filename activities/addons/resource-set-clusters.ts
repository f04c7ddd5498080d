import { Context } from '@temporalio/activity';
import type { LabelSelector } from '../../src/contract/label-selector';
import type { CandidateCluster } from '../../src/contract/resource-set';
import { resourceSetClusters } from '../../src/addons/resource-set-clusters';

/** The clusters a ClusterResourceSet's selector matches in its namespace (src/addons/resource-set-clusters.ts). */
export async function matchResourceSetClusters(input: {
  namespace: string;
  selector: LabelSelector;
}): Promise<CandidateCluster[]> {
  const ctx = Context.current();
  return resourceSetClusters(ctx.client, input.namespace, input.selector, () => ctx.heartbeat());
}
