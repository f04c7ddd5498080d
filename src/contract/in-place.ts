import type { KubeadmConfigSpec } from './kubeadm-config-spec';
import type { BootstrapRole, MachineTemplateChange } from './machine';

/**
 * What a provider can change on a running machine without replacing it, by role: it says so when it creates a
 * cluster's infrastructure, and owners read it from their cluster's facts. Clusters made before providers said
 * anything have none, and replace their machines as they always did.
 */
export interface InPlaceCapability {
  /** Template fields a running worker takes in place; `version` moves only forward (a kubelet is never downgraded). */
  worker: InPlaceField[];
  /** The same for control-plane machines: none where changing them could cost etcd its quorum. */
  controlPlane: InPlaceField[];
}

/** `kubeletExtraArgs`: the kubelet's arguments in a machine's kubeadm configuration, restarted with the new ones. */
export type InPlaceField = 'version' | 'kubeletExtraArgs';

/**
 * Kubelet arguments a kubelet reads only when it registers its Node (or that name the Node): changing them on a
 * running machine would change nothing, so a change to them replaces the machine.
 */
const registrationOnlyKubeletArgs = [
  'node-labels',
  'register-with-taints',
  'register-node',
  'hostname-override',
  'node-ip',
  'provider-id',
];

/** Why changed kubelet arguments need a new machine, when one of them is read only at registration. */
export function registrationOnlyRefusal(args: string[]): string | undefined {
  const atRegistration = args.filter((a) => registrationOnlyKubeletArgs.includes(a));
  return atRegistration.length
    ? `its kubelet's ${atRegistration.join(', ')} changed, which a kubelet reads only when it registers its Node: only a new machine takes it`
    : undefined;
}

/** Where a machine's kubelet takes its arguments: the first control-plane machine's init, every other's join. */
export type KubeletArgsFrom = 'init' | 'join';

export const kubeletArgsFrom = (role: BootstrapRole): KubeletArgsFrom => (role === 'init' ? 'init' : 'join');

/** The kubelet arguments a bootstrap configuration gives a machine (a worker's: its join configuration's). */
export const kubeletArgs = (config: KubeadmConfigSpec, from: KubeletArgsFrom = 'join'): Record<string, string> =>
  (from === 'init' ? config.initConfiguration : config.joinConfiguration)?.nodeRegistration?.kubeletExtraArgs ?? {};

/** The kubelet arguments whose values differ between two bootstrap configurations, in any of `from`, sorted. */
export function changedKubeletArgs(
  before: KubeadmConfigSpec,
  after: KubeadmConfigSpec,
  from: KubeletArgsFrom[] = ['join'],
): string[] {
  const changed = from.flatMap((f) => {
    const [was, is] = [kubeletArgs(before, f), kubeletArgs(after, f)];
    return [...new Set([...Object.keys(was), ...Object.keys(is)])].filter((k) => was[k] !== is[k]);
  });
  return [...new Set(changed)].sort();
}

/**
 * A bootstrap configuration without the kubelet arguments of `from`: equal when nothing else differs (a
 * configuration that gives only kubelet arguments equals one without that section).
 */
export function withoutKubeletArgs(config: KubeadmConfigSpec, from: KubeletArgsFrom[]): KubeadmConfigSpec {
  const strip = (c: KubeadmConfigSpec['joinConfiguration']) => ({
    ...c,
    nodeRegistration: { ...c?.nodeRegistration, kubeletExtraArgs: undefined },
  });
  return {
    ...config,
    ...(from.includes('init') ? { initConfiguration: strip(config.initConfiguration) } : {}),
    ...(from.includes('join') ? { joinConfiguration: strip(config.joinConfiguration) } : {}),
  };
}

/**
 * An owner's opt-out: `"false"` on a MachineDeployment or KubeadmControlPlane replaces its machines on every
 * rollout, as before in-place updates; `"true"` (or no annotation) lets the provider update them in place where it can.
 */
export const inPlaceUpdatesAnnotation = 'capt.cluster.x-k8s.io/in-place-updates';

/** What the owner asks of one machine: take the new template's version, set name and revision where it runs. */
export interface InPlaceUpdateRequest {
  version: string;
  /** The MachineSet the machine belongs to once updated (kept in its memo for an owner that adopts it). */
  templateHash: string;
  /** The labels and annotations that say which MachineSet and revision it belongs to, swapped as a template change. */
  metadata: MachineTemplateChange;
  /** The new template's bootstrap configuration, when its kubelet arguments changed: the kubelet restarts with them. */
  bootstrapConfig?: KubeadmConfigSpec;
}
