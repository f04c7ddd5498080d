import type { MachineDeploymentModel, MachineTemplateModel } from '../../src/api/model';
import {
  changedKubeletArgs,
  registrationOnlyRefusal,
  withoutKubeletArgs,
  type InPlaceCapability,
} from '../../src/contract/in-place';
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
  if (!capability?.worker.length) return no('the provider updates no worker in place');
  if (spec.inPlaceUpdates === false) return no('in-place updates are turned off for this MachineDeployment');
  if (spec.strategy.type !== 'RollingUpdate') return no('OnDelete replaces machines only as they are deleted');
  if (from.restartedAt !== to.restartedAt) return no('a restart asks for new machines');
  const before = rolloutFields(from.template);
  const after = rolloutFields(to.template);
  const bootstrap = bootstrapInPlace(capability, before.bootstrap, after.bootstrap);
  if (typeof bootstrap === 'string') return no(bootstrap);
  const changed = (Object.keys(after) as (keyof typeof after)[]).filter(
    (k) =>
      k !== 'version' && !(k === 'bootstrap' && bootstrap) && JSON.stringify(before[k]) !== JSON.stringify(after[k]),
  );
  if (changed.length) return no(`its ${changed.join(', ')} changed, which only a new machine takes`);
  const newer = compareVersions(after.version, before.version);
  // The same version is taken in place only with new kubelet arguments; a lower one never.
  if (newer < 0 || (newer === 0 && !bootstrap))
    return no(`${after.version} is not newer than ${before.version}: a version goes down only by replacement`);
  if (newer > 0 && !capability.worker.includes('version'))
    return no("the provider does not change a worker's version in place");
  return { inPlace: true };
}

/**
 * Whether a worker takes the new bootstrap configuration in place: true when it differs only in the kubelet's
 * arguments and the provider restarts kubelets with new ones, a reason when only a registration-time argument
 * stands in the way, false when it did not change that way (or at all).
 */
function bootstrapInPlace(
  capability: InPlaceCapability,
  before: MachineTemplateModel['bootstrap'],
  after: MachineTemplateModel['bootstrap'],
): boolean | string {
  if (!capability.worker.includes('kubeletExtraArgs')) return false;
  const args = changedKubeletArgs(before.config, after.config);
  const withoutArgs = (b: MachineTemplateModel['bootstrap']) =>
    JSON.stringify([b.kind, withoutKubeletArgs(b.config, ['join'])]);
  if (withoutArgs(before) !== withoutArgs(after)) return false;
  return registrationOnlyRefusal(args) ?? args.length > 0;
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
