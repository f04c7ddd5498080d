import type { TopologyModel } from '../../src/api/model';

/** The MachineDeployments released (no longer held) and still rolling out: they fill the upgrade concurrency. */
const upgradingNow = (topology: TopologyModel, held: readonly string[], upgrading: (name: string) => boolean) =>
  topology.machineDeployments.filter((md) => !held.includes(md.name) && upgrading(md.name));

/**
 * Which held MachineDeployments of a topology take their new version now, the control plane having upgraded:
 * as Cluster API's topology controller orders them, in topology order, at most `upgradeConcurrency` upgrading at
 * once, a deferred one (defer-upgrade) left for later, and one with hold-upgrade-sequence holding itself and
 * every one after it. `upgrading` says whether a MachineDeployment already released is still rolling out.
 */
export function topologyReleases(
  topology: TopologyModel,
  held: readonly string[],
  upgrading: (name: string) => boolean,
): string[] {
  let running = upgradingNow(topology, held, upgrading).length;
  const released: string[] = [];
  for (const md of topology.machineDeployments) {
    if (!held.includes(md.name)) continue;
    if (md.holdUpgradeSequence || running >= topology.upgradeConcurrency) break;
    if (md.deferUpgrade) continue;
    released.push(md.name);
    running++;
  }
  return released;
}

/** Why a held MachineDeployment of a topology waits, once the control plane runs its version. */
export function topologyHoldReason(
  topology: TopologyModel,
  held: readonly string[],
  name: string,
  upgrading: (name: string) => boolean,
): string {
  const order = topology.machineDeployments;
  const index = order.findIndex((md) => md.name === name);
  const holding = order.slice(0, index + 1).find((md) => md.holdUpgradeSequence && held.includes(md.name));
  if (holding)
    return `held: MachineDeployment topology ${holding.topologyName} has topology.cluster.x-k8s.io/hold-upgrade-sequence`;
  if (order[index]?.deferUpgrade) return 'deferred: its topology has topology.cluster.x-k8s.io/defer-upgrade';
  const busy = upgradingNow(topology, held, upgrading).map((md) => md.topologyName);
  return `waits its turn in the topology's order (upgrade concurrency ${topology.upgradeConcurrency}${busy.length ? `; upgrading: ${busy.join(', ')}` : ''})`;
}
