import type { MachineDeploymentModel, MachineTemplateModel } from '../../src/api/model';
import type { InPlaceCapability } from '../../src/contract/in-place';
import { compareVersions } from '../../src/contract/upgrade-plan';
import { rolloutFields } from './machine-sets';

/** A template as a revision holds it: a restart makes new machines even of the same template. */
interface TemplateRevision {
  template: MachineTemplateModel;
  restartedAt?: string;
}

/** Whether a worker made from `from` can take `to` where it runs, and if not, why (the dry run says it). */
export function workerInPlace(
  capability: InPlaceCapability | undefined,
  spec: Pick<MachineDeploymentModel, 'inPlaceUpdates' | 'strategy'>,
  from: TemplateRevision,
  to: TemplateRevision,
): { inPlace: true } | { inPlace: false; why: string } {
  const no = (why: string) => ({ inPlace: false as const, why });
  if (!capability?.worker.includes('version')) return no('the provider updates no worker in place');
  if (spec.inPlaceUpdates === false) return no('in-place updates are turned off for this MachineDeployment');
  if (spec.strategy.type !== 'RollingUpdate') return no('OnDelete replaces machines only as they are deleted');
  if (from.restartedAt !== to.restartedAt) return no('a restart asks for new machines');
  const before = rolloutFields(from.template);
  const after = rolloutFields(to.template);
  const changed = (Object.keys(after) as (keyof typeof after)[]).filter(
    (k) => k !== 'version' && JSON.stringify(before[k]) !== JSON.stringify(after[k]),
  );
  if (changed.length) return no(`its ${changed.join(', ')} changed, which only a new machine takes`);
  if (compareVersions(after.version, before.version) <= 0)
    return no(`${after.version} is not newer than ${before.version}: a version goes down only by replacement`);
  return { inPlace: true };
}

/** The older sets whose machines take the current set's template in place, by hash. */
export function inPlaceSets(
  capability: InPlaceCapability | undefined,
  spec: MachineDeploymentModel,
  sets: (TemplateRevision & { hash: string })[],
): string[] {
  const current = sets.at(-1)!;
  return sets
    .slice(0, -1)
    .filter((set) => workerInPlace(capability, spec, set, current).inPlace)
    .map((set) => set.hash);
}
