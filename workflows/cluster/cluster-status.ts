import type { ClusterModel } from '../../src/api/model';
import type { ClusterStatus } from '../../src/contract/cluster';
import type { Condition } from '../../src/contract/machine';
import type { ClusterFacts, OwnerSummary } from '../../src/contract/owner';

export interface ClusterState {
  facts: ClusterFacts;
  /** The last applied model, without secrets. */
  model: ClusterModel;
  infrastructureReady: boolean;
  children: Record<string, OwnerSummary>;
  workersStarted: boolean;
  deleting: boolean;
  deleted: boolean;
  createdAt: string;
  step: string;
}

const cond = (type: string, ok: boolean, reason: string, message?: string): Condition =>
  ok ? { type, status: 'True' } : { type, status: 'False', reason, ...(message ? { message } : {}) };

/** The one place a cluster's status is computed. */
export function clusterStatus(state: ClusterState): ClusterStatus {
  const cp = state.children[`KubeadmControlPlane/${state.model.controlPlane.name}`];
  const mds = state.model.machineDeployments.map((md) => state.children[`MachineDeployment/${md.name}`]).filter((s): s is OwnerSummary => !!s);
  // The details are each owner's own (its status query and UI page): the cluster names which one to look at.
  const notReady = (s: OwnerSummary) => `${s.kind} ${s.name} is not ready (see workflow ${s.kind === 'MachineDeployment' ? 'md' : 'kcp'}/${s.namespace}/${s.name})`;
  const workersReady = state.model.machineDeployments.every((md) => !!state.children[`MachineDeployment/${md.name}`]?.ready);
  const conditions = [
    cond('InfrastructureReady', state.infrastructureReady, 'WaitingForInfrastructure'),
    cond('ControlPlaneInitialized', !!cp?.initialized, 'WaitingForControlPlane', cp && notReady(cp)),
    cond('ControlPlaneAvailable', !!cp?.available, 'ControlPlaneNotAvailable', cp && notReady(cp)),
    cond('WorkersAvailable', workersReady, 'WorkersNotAvailable', mds.filter((s) => !s.ready).map(notReady).join('; ') || undefined),
  ];
  const available = conditions.every((c) => c.status === 'True');
  conditions.unshift(cond('Available', available, conditions.find((c) => c.status !== 'True')?.type ?? '', state.step));
  const failed = [cp, ...mds].some((s) => (s?.failedMachines ?? 0) > 0);
  return {
    namespace: state.facts.namespace, name: state.facts.name, provider: state.facts.provider,
    phase: state.deleted ? 'Deleted' : state.deleting ? 'Deleting' : failed ? 'Failed' : available ? 'Provisioned' : 'Provisioning',
    version: state.model.controlPlane.version, endpoint: state.facts.endpoint, createdAt: state.createdAt,
    controlPlane: cp, machineDeployments: mds, conditions, step: state.step,
  };
}
