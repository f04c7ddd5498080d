import type { KubeadmConfigSpec } from './kubeadm-config-spec';
import type { MachineTemplateChange } from './machine';

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

/** `kubeletExtraArgs`: the kubelet's arguments in a worker's join configuration, restarted with the new ones. */
export type InPlaceField = 'version' | 'kubeletExtraArgs';

/**
 * Kubelet arguments a kubelet reads only when it registers its Node (or that name the Node): changing them on a
 * running machine would change nothing, so a change to them replaces the machine.
 */
export const registrationOnlyKubeletArgs = [
  'node-labels',
  'register-with-taints',
  'register-node',
  'hostname-override',
  'node-ip',
  'provider-id',
];

/** The kubelet arguments a worker's bootstrap configuration gives it. */
export const workerKubeletArgs = (config: KubeadmConfigSpec): Record<string, string> =>
  config.joinConfiguration?.nodeRegistration?.kubeletExtraArgs ?? {};

/** The kubelet arguments whose values differ between two workers' bootstrap configurations, sorted. */
export function changedKubeletArgs(before: KubeadmConfigSpec, after: KubeadmConfigSpec): string[] {
  const [was, is] = [workerKubeletArgs(before), workerKubeletArgs(after)];
  return [...new Set([...Object.keys(was), ...Object.keys(is)])].filter((k) => was[k] !== is[k]).sort();
}

/**
 * An owner's opt-out: `"false"` on a MachineDeployment replaces its machines on every rollout, as before in-place
 * updates; `"true"` (or no annotation) lets the provider update them in place where it can.
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
