import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { appliedModelQuery, clusterStatusQuery } from '../contract/cluster-messages';
import { selectorMatches, type LabelSelector } from '../contract/label-selector';
import { isDnsName } from '../util/checked-paths';
import { maxBoundClusters, type CandidateCluster } from '../contract/resource-set';

/** Queries at once: each is an answer from a cluster workflow, a few KB. */
const concurrency = 10;

/**
 * The clusters of `namespace` a ClusterResourceSet's selector matches, read from Temporal: the visibility store
 * lists the running cluster workflows, and each one's applied model gives its labels and its status whether its
 * control plane is up. At most maxBoundClusters + 1 are returned (the caller says the rest are not bound). A
 * cluster whose workflow ends meanwhile is left out.
 */
export async function resourceSetClusters(
  client: Client,
  namespace: string,
  selector: LabelSelector,
  onProgress: () => void = () => {},
): Promise<CandidateCluster[]> {
  // It becomes part of a visibility query: checked here, whoever called.
  if (!isDnsName(namespace)) throw new Error(`namespace ${JSON.stringify(namespace)} is not a DNS name`);
  const query = `CaptKind = "Cluster" AND CaptNamespace = "${namespace}" AND ExecutionStatus = "Running"`;
  const ids: string[] = [];
  for await (const wf of client.workflow.list({ query })) ids.push(wf.workflowId);
  const found: CandidateCluster[] = [];
  for (let i = 0; i < ids.length && found.length <= maxBoundClusters; i += concurrency) {
    const batch = await Promise.all(ids.slice(i, i + concurrency).map((id) => candidate(client, id, selector)));
    found.push(...batch.filter((c): c is CandidateCluster => !!c));
    onProgress();
  }
  return found.sort((a, b) => a.name.localeCompare(b.name)).slice(0, maxBoundClusters + 1);
}

async function candidate(client: Client, id: string, selector: LabelSelector): Promise<CandidateCluster | undefined> {
  const handle = client.workflow.getHandle(id);
  try {
    const { model } = await handle.query(appliedModelQuery);
    if (!selectorMatches(selector, model.labels)) return undefined;
    const status = await handle.query(clusterStatusQuery);
    return {
      name: model.name,
      createdAt: status.createdAt,
      labels: model.labels,
      initialized: !!status.controlPlane?.initialized,
      deleting: status.phase === 'Deleting' || status.phase === 'Deleted',
    };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
}
