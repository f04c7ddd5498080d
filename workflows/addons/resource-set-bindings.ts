import type { Condition } from '../../src/contract/machine';
import {
  maxBoundClusters,
  resourceKey,
  type AddonResource,
  type BoundResource,
  type CandidateCluster,
  type ResourceSetBinding,
  type ResourceSetModel,
} from '../../src/contract/resource-set';

/**
 * Which of a set's resources each cluster gets, and what its bindings then say: Cluster API's ClusterResourceSet
 * rules, pure so that unit tests hold them. Objects are never deleted from a cluster; bindings are dropped when
 * their cluster is gone (a cluster made again under its name is a new one) and kept while it lives, as Cluster
 * API keeps them when a cluster stops matching.
 */

/** The bindings of clusters that still exist as they were bound, in the clusters' order. */
export function liveBindings(
  bindings: ResourceSetBinding[],
  existing: { name: string; createdAt: string }[],
): ResourceSetBinding[] {
  const alive = new Set(existing.map((c) => `${c.name}@${c.createdAt}`));
  return bindings.filter((b) => alive.has(`${b.cluster}@${b.clusterCreatedAt}`));
}

/** What a cluster is due, in the set's order: ApplyOnce what was never applied, Reconcile also what changed since. */
export function dueResources(
  set: ResourceSetModel,
  held: AddonResource[],
  binding: ResourceSetBinding | undefined,
): AddonResource[] {
  return set.resources.flatMap((ref) => {
    const resource = held.find((r) => resourceKey(r) === resourceKey(ref));
    if (!resource) return [];
    const bound = binding?.resources.find((b) => resourceKey(b) === resourceKey(ref));
    const due = !bound?.applied || (set.strategy === 'Reconcile' && bound.hash !== resource.hash);
    return due ? [resource] : [];
  });
}

/** The binding after an attempt: each attempted resource's entry replaced, the others kept. */
export function bound(
  cluster: CandidateCluster,
  binding: ResourceSetBinding | undefined,
  results: Omit<BoundResource, 'lastAppliedTime'>[],
  now: string,
): ResourceSetBinding {
  const kept = (binding?.resources ?? []).filter((b) => !results.some((r) => resourceKey(r) === resourceKey(b)));
  return {
    cluster: cluster.name,
    clusterCreatedAt: cluster.createdAt,
    resources: [...kept, ...results.map((r) => ({ ...r, lastAppliedTime: now }))],
  };
}

/** Cluster API's v1beta2 ResourcesApplied condition; none while no cluster matches, as there. */
export function resourcesApplied(
  set: ResourceSetModel,
  held: AddonResource[],
  matched: CandidateCluster[],
  bindings: ResourceSetBinding[],
): Condition[] {
  if (!matched.length) return [];
  const problems: string[] = [];
  if (matched.length > maxBoundClusters)
    problems.push(
      `more than ${maxBoundClusters} clusters match; the ones after ${matched[maxBoundClusters - 1]!.name} get nothing`,
    );
  for (const c of matched.slice(0, maxBoundClusters)) {
    const binding = bindings.find((b) => b.cluster === c.name);
    if (!c.initialized) problems.push(`cluster ${c.name}: waiting for its control plane`);
    else
      for (const r of binding?.resources ?? [])
        if (!r.applied && set.resources.some((ref) => resourceKey(ref) === resourceKey(r)))
          problems.push(`cluster ${c.name}: ${resourceKey(r)}: ${r.message ?? 'not applied yet'}`);
  }
  const missing = set.resources.filter((ref) => !held.some((r) => resourceKey(r) === resourceKey(ref)));
  for (const ref of missing) problems.push(`${resourceKey(ref)} is not known to capt: apply it`);
  if (!problems.length) return [{ type: 'ResourcesApplied', status: 'True', reason: 'Applied' }];
  const shown = problems.slice(0, 5).join('; ') + (problems.length > 5 ? `; and ${problems.length - 5} more` : '');
  return [
    {
      type: 'ResourcesApplied',
      status: 'False',
      reason: 'NotApplied',
      message: shown,
    },
  ];
}
