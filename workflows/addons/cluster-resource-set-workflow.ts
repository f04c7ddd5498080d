import {
  allHandlersFinished,
  condition,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type * as activities from '../../activities';
import {
  maxBoundClusters,
  maxResourceBytes,
  resourceKey,
  type AddonResource,
  type CandidateCluster,
  type ResourceSetBinding,
  type ResourceSetModel,
  type ResourceSetStatus,
} from '../../src/contract/resource-set';
import {
  applyResourceSetUpdate,
  deleteResourceSetUpdate,
  resourceSetStatusQuery,
} from '../../src/contract/resource-set-messages';
import { selectorText } from '../../src/contract/label-selector';
import type { UnknownSignal } from '../../src/contract/unknown-signals';
import { invalidSpec } from '../../src/errors';
import { continueAsNewOnTargetBuild, ownerContinueAsNewDue, pinToBuild } from '../shared/build-upgrade';
import { recordUnknownSignals, unknownSignalsDetails } from '../shared/unknown-signals';
import { bound, dueResources, liveBindings, resourcesApplied } from './resource-set-bindings';
import { resourceSetChangeRefusal } from './resource-set-change';

const { matchResourceSetClusters, applyAddonResources } = proxyActivities<typeof activities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '30 seconds',
  // A cluster whose apiserver does not answer is tried again at the next pass, not held up here.
  retry: { maximumAttempts: 3, initialInterval: '2 seconds' },
});

export interface ResourceSetInput {
  set: ResourceSetModel;
  /** The content of every resource the set names that capt was given, by kind and name. */
  resources: AddonResource[];
  bindings?: ResourceSetBinding[];
  generation?: number;
  unknownSignals?: UnknownSignal[];
}

/** Clusters given their resources at once. */
const concurrency = 5;
/** How soon a new or relabelled cluster, or a control plane come up, is seen: sooner while something waits. */
const passInterval = { settled: '30 seconds', waiting: '5 seconds' } as const;

/**
 * A ClusterResourceSet (`crs/<ns>/<name>`): each pass matches the clusters of its namespace, gives each
 * cluster whose control plane is up the resources it is due (dueResources), and records what it got in that
 * cluster's binding. A change applied with `capt apply` wakes it at once; otherwise it passes every 30 s
 * (5 s while a cluster waits or failed). Deleting it leaves what it applied in the clusters.
 */
export async function clusterResourceSetWorkflow(input: ResourceSetInput): Promise<ResourceSetStatus> {
  let set = input.set;
  let held = input.resources;
  let bindings = input.bindings ?? [];
  let generation = input.generation ?? 1;
  let observedGeneration = 0;
  let matched: CandidateCluster[] = [];
  let deleting = false;
  let wake = false;
  const unknownSignals = input.unknownSignals ?? [];

  const status = (): ResourceSetStatus => ({
    namespace: set.namespace,
    name: set.name,
    strategy: set.strategy,
    selector: set.selector,
    resources: set.resources.map((ref) => {
      const r = held.find((h) => resourceKey(h) === resourceKey(ref));
      return r ? { ...ref, hash: r.hash, objects: r.objects.length } : ref;
    }),
    bindings,
    conditions: resourcesApplied(set, held, matched, bindings),
    waiting: matched.filter((c) => !c.initialized).map((c) => c.name),
    generation,
    observedGeneration,
    deleting,
  });
  const details = () =>
    setCurrentDetails(
      `ClusterResourceSet ${set.namespace}/${set.name} (${set.strategy}, clusters ${selectorText(set.selector)}): ` +
        `${bindings.length} bound, ${matched.filter((c) => !c.initialized).length} waiting for their control plane` +
        unknownSignalsDetails(unknownSignals),
    );

  setHandler(resourceSetStatusQuery, status);
  setHandler(
    applyResourceSetUpdate,
    ({ set: next, resources }) => {
      if (next) set = next;
      held = [...held.filter((h) => !resources.some((r) => resourceKey(r) === resourceKey(h))), ...resources].filter(
        (h) => set.resources.some((ref) => resourceKey(ref) === resourceKey(h)),
      );
      generation += 1;
      wake = true;
      details();
      return status();
    },
    {
      validator: ({ set: next, resources }) => {
        if (deleting) throw invalidSpec(`ClusterResourceSet ${set.namespace}/${set.name} is being deleted`);
        const refusal = resourceSetChangeRefusal(set, next, [...held, ...resources].map(resourceKey));
        if (refusal) throw invalidSpec(refusal);
        const names: ResourceSetModel['resources'] = (next ?? set).resources;
        const after = [...held, ...resources].filter((h) => names.some((ref) => resourceKey(ref) === resourceKey(h)));
        const bytes = JSON.stringify(after).length;
        if (bytes > maxResourceBytes)
          throw invalidSpec(
            `ClusterResourceSet ${set.namespace}/${set.name}: its resources would come to ${bytes} bytes, over ${maxResourceBytes >> 10} KiB; split them over several sets`,
          );
      },
    },
  );
  setHandler(deleteResourceSetUpdate, () => {
    deleting = true;
    wake = true;
    return status();
  });
  recordUnknownSignals(unknownSignals, details);
  details();

  while (!deleting) {
    const passGeneration = generation;
    matched = await matchResourceSetClusters({ namespace: set.namespace, selector: set.selector });
    bindings = liveBindings(bindings, matched);
    const ready = matched.slice(0, maxBoundClusters).filter((c) => c.initialized && !c.deleting);
    for (let i = 0; i < ready.length && !deleting; i += concurrency) {
      await Promise.all(
        ready.slice(i, i + concurrency).map(async (cluster) => {
          const binding = bindings.find((b) => b.cluster === cluster.name);
          const due = dueResources(set, held, binding);
          if (!due.length) return;
          const results = await applyAddonResources({
            namespace: set.namespace,
            cluster: cluster.name,
            strategy: set.strategy,
            resources: due,
          }).catch((err: Error) =>
            due.map((r) => ({ kind: r.kind, name: r.name, hash: r.hash, applied: false, message: err.message })),
          );
          const next = bound(cluster, binding, results, new Date().toISOString());
          bindings = [...bindings.filter((b) => b.cluster !== cluster.name), next].sort((a, b) =>
            a.cluster.localeCompare(b.cluster),
          );
        }),
      );
    }
    observedGeneration = passGeneration;
    details();
    if (ownerContinueAsNewDue()) {
      await condition(allHandlersFinished);
      return continueAsNewOnTargetBuild<typeof clusterResourceSetWorkflow>({
        set,
        resources: held,
        bindings,
        generation,
        unknownSignals,
      });
    }
    const settled = resourcesApplied(set, held, matched, bindings)[0]?.status !== 'False';
    await condition(() => wake || deleting, settled ? passInterval.settled : passInterval.waiting);
    wake = false;
  }
  await condition(allHandlersFinished);
  const { workflowId } = workflowInfo();
  setCurrentDetails(`${workflowId}: deleted; what it applied stays in the clusters`);
  return status();
}

pinToBuild(clusterResourceSetWorkflow);
