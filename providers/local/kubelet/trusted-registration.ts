import { isDnsName } from '../../../src/util/checked-paths';
import { maxPods } from '../../../src/contract/kubelet-max-pods';
import type { KubeletRegistration, LocalMachineRecord } from '../layout';

/**
 * A machine writes its kubelet registration, so only what is its own to say is taken from it: labels,
 * taints and max-pods (bounded). Its identity comes from the host's record: providerID, address, version, and a Node name
 * that may differ from the machine's only when it names no other machine (a machine must not heartbeat,
 * and so keep Ready, another machine's Node).
 */
export function trustedRegistration(
  record: LocalMachineRecord,
  claimed: KubeletRegistration | undefined,
  machines: string[],
): KubeletRegistration | undefined {
  if (!claimed) return undefined;
  const ownName =
    typeof claimed.nodeName === 'string' &&
    isDnsName(claimed.nodeName) &&
    (claimed.nodeName === record.name || !machines.includes(claimed.nodeName));
  const labels = Object.entries(typeof claimed.labels === 'object' && claimed.labels ? claimed.labels : {})
    .filter(([k, v]) => typeof k === 'string' && typeof v === 'string')
    .slice(0, 100);
  const taints = (Array.isArray(claimed.taints) ? claimed.taints : [])
    .filter((t) => typeof t?.key === 'string' && typeof t.effect === 'string')
    .slice(0, 50);
  // The host's record says the kubelet's arguments once an in-place update gave it new ones; before, the machine does.
  const pods = maxPods(record.kubeletExtraArgs ? record.kubeletExtraArgs['max-pods'] : claimed.maxPods);
  return {
    nodeName: ownName ? claimed.nodeName : record.name,
    providerID: record.providerID,
    kubeletVersion: record.version,
    ip: record.ip,
    labels: Object.fromEntries(labels),
    taints,
    ...(pods ? { maxPods: pods } : {}),
  };
}
