import type { ControlPlaneModel } from '../../src/api/model';
import {
  changedKubeletArgs,
  registrationOnlyRefusal,
  withoutKubeletArgs,
  type InPlaceCapability,
  type KubeletArgsFrom,
} from '../../src/contract/in-place';
import { compareVersions } from '../../src/contract/upgrade-plan';
import type { ControlPlaneRevision } from './control-plane-revisions';

/** A template as a revision holds it: a restart makes new machines even of the same template. */
interface TemplateRevision {
  template: ControlPlaneRevision['template'];
  restartedAt?: string;
}

/** A control-plane machine's kubelet takes the init configuration's arguments (the first machine) or the join's. */
const controlPlaneArgs: KubeletArgsFrom[] = ['init', 'join'];

/**
 * Whether control-plane machines made from `from` can take `to` where they run, and if not, why (the dry run
 * says it): only a change of their kubelets' arguments (or a newer version, where the provider can change one
 * without a new etcd member) with everything else of the template as it was.
 */
export function controlPlaneInPlace(
  capability: InPlaceCapability | undefined,
  spec: Pick<ControlPlaneModel, 'inPlaceUpdates'>,
  from: TemplateRevision,
  to: TemplateRevision,
): { inPlace: true } | { inPlace: false; why: string } {
  const no = (why: string) => ({ inPlace: false as const, why });
  if (!capability?.controlPlane.length) return no('the provider updates no control-plane machine in place');
  if (spec.inPlaceUpdates === false) return no('in-place updates are turned off for this KubeadmControlPlane');
  if (from.restartedAt !== to.restartedAt) return no('a restart asks for new machines');
  const [before, after] = [from.template, to.template];
  if (JSON.stringify(before.infrastructure) !== JSON.stringify(after.infrastructure))
    return no('its infrastructure template changed, which only a new machine takes');
  const strip = (t: TemplateRevision['template']) =>
    JSON.stringify(withoutKubeletArgs(t.kubeadmConfigSpec, controlPlaneArgs));
  if (strip(before) !== strip(after))
    return no("its kubeadmConfigSpec changed beyond the kubelet's arguments, which only a new machine takes");
  const args = changedKubeletArgs(before.kubeadmConfigSpec, after.kubeadmConfigSpec, controlPlaneArgs);
  if (args.length && !capability.controlPlane.includes('kubeletExtraArgs'))
    return no("the provider gives no control-plane machine's kubelet new arguments in place");
  const atRegistration = registrationOnlyRefusal(args);
  if (atRegistration) return no(atRegistration);
  const newer = compareVersions(after.version, before.version);
  if (newer < 0)
    return no(`${after.version} is not newer than ${before.version}: a version goes down only by replacement`);
  if (newer > 0 && !capability.controlPlane.includes('version'))
    return no('the provider replaces control-plane machines to change their version (a new etcd member joins first)');
  if (newer === 0 && !args.length) return no('nothing that a machine takes in place changed');
  return { inPlace: true };
}
