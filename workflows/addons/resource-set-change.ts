import { selectorText } from '../../src/contract/label-selector';
import { resourceKey, type ResourceSetModel } from '../../src/contract/resource-set';

/**
 * Why a change to a running set is refused, or undefined: its selector and strategy cannot change (Cluster API's
 * webhook refuses the same), and every resource it names must be among `known` (the keys of what it holds and
 * what the change gives). The client checks it before it sends anything; the workflow's validator again.
 */
export function resourceSetChangeRefusal(
  current: ResourceSetModel,
  next: ResourceSetModel | undefined,
  known: string[],
): string | undefined {
  const where = `ClusterResourceSet ${current.namespace}/${current.name}`;
  if (next && selectorText(next.selector) !== selectorText(current.selector))
    return `${where}: spec.clusterSelector: field is immutable (it is ${selectorText(current.selector)}); delete the set and apply it again to select other clusters`;
  if (next && next.strategy !== current.strategy)
    return `${where}: spec.strategy: field is immutable (it is ${current.strategy}); delete the set and apply it again to change it`;
  const unknown = (next ?? current).resources.filter((ref) => !known.includes(resourceKey(ref)));
  if (unknown.length)
    return `${where}: spec.resources names ${unknown.map((r) => `${r.kind} ${r.name}`).join(', ')}, which this apply does not hold and capt was never given; apply ${unknown.length > 1 ? 'them' : 'it'} with the set`;
  return undefined;
}
