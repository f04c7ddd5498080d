import type { AppliedAddon } from '../client/resource-sets';
import { selectorText } from '../contract/label-selector';
import type { ResourceSetStatus } from '../contract/resource-set';
import { age, table } from './render';

/** An addon object of `capt apply`, as kubectl prints it, and for a dry run of a set what each cluster would get. */
export const appliedAddonText = (o: AppliedAddon, dryRun: boolean) =>
  [`${o.ref} ${o.outcome}${dryRun ? ' (dry run)' : ''}`, ...(o.clusters ?? []).map((c) => `  ${c}`)].join('\n');

const applied = (s: ResourceSetStatus) => s.conditions.find((c) => c.type === 'ResourcesApplied');

/** `capt get clusterresourcesets`: Cluster API's columns, with the clusters bound and waiting. */
export function resourceSetsTable(sets: ResourceSetStatus[]): string {
  return table(
    ['NAMESPACE', 'NAME', 'STRATEGY', 'SELECTOR', 'APPLIED', 'BOUND', 'WAITING'],
    sets.map((s) => [
      s.namespace,
      s.name,
      s.strategy,
      selectorText(s.selector),
      applied(s)?.status ?? '',
      String(s.bindings.length),
      String(s.waiting.length),
    ]),
  );
}

/** `capt describe clusterresourceset`: its resources, its condition, and each cluster's binding, as ClusterResourceSetBinding shows it. */
export function resourceSetText(s: ResourceSetStatus, now = Date.now()): string {
  const c = applied(s);
  return [
    `ClusterResourceSet ${s.namespace}/${s.name}`,
    `  strategy: ${s.strategy}`,
    `  clusters: ${selectorText(s.selector)}`,
    `  resources:`,
    ...s.resources.map(
      (r) => `    ${r.kind}/${r.name}: ${r.hash ? `${r.objects} objects, ${r.hash}` : 'not given yet'}`,
    ),
    `  ResourcesApplied: ${c ? `${c.status}${c.reason ? ` ${c.reason}` : ''}${c.message ? `: ${c.message}` : ''}` : '(no cluster matches)'}`,
    `  generation ${s.generation}, observed ${s.observedGeneration}`,
    ...(s.waiting.length ? [`  waiting for their control plane: ${s.waiting.join(', ')}`] : []),
    `  bindings:`,
    ...(s.bindings.length ? [] : ['    (none)']),
    ...s.bindings.flatMap((b) => [
      `    cluster ${b.cluster}:`,
      ...b.resources.map(
        (r) =>
          `      ${r.kind}/${r.name}: ${r.applied ? 'applied' : 'NOT applied'} ${age(r.lastAppliedTime, now)} ago, ${r.hash}${r.message ? `: ${r.message}` : ''}`,
      ),
    ]),
  ].join('\n');
}
