import type { V1NodeSystemInfo } from '@kubernetes/client-node';
import { nodeInfoMaxLength, type NodeSystemInfo } from '../../src/contract/machine';

const fields = [
  'machineID',
  'systemUUID',
  'bootID',
  'kernelVersion',
  'osImage',
  'containerRuntimeVersion',
  'kubeletVersion',
  'kubeProxyVersion',
  'operatingSystem',
  'architecture',
] as const satisfies readonly (keyof NodeSystemInfo & keyof V1NodeSystemInfo)[];

/**
 * What a machine keeps of its Node's `status.nodeInfo`: the ten strings Cluster API's Machine requires (empty when
 * the kubelet left one out), each cut to nodeInfoMaxLength, and swap's capacity when reported. A kubelet writes
 * these, so the cut keeps a workflow's state and status bounded whatever it wrote.
 */
export function nodeSystemInfo(info: V1NodeSystemInfo | undefined): NodeSystemInfo | undefined {
  if (!info) return undefined;
  const kept = Object.fromEntries(
    fields.map((f) => [f, typeof info[f] === 'string' ? info[f].slice(0, nodeInfoMaxLength) : '']),
  ) as Record<(typeof fields)[number], string>;
  const capacity = info.swap?.capacity;
  return { ...kept, ...(Number.isSafeInteger(capacity) ? { swap: { capacity } } : {}) };
}
