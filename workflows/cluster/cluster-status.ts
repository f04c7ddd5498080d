import type { Condition } from '../machine/machine-model';
import type { ClusterFacts, OwnerStatus } from '../shared/owner-status';

export interface ClusterState {
  facts: ClusterFacts;
  /** The last applied model, without secrets. */
  model: import('../../src/api/model').ClusterModel;
  infrastructureReady: boolean;
  children: Record<string, OwnerStatus>;
  workersStarted: boolean;
  deleting: boolean;
  deleted: boolean;
  createdAt: string;
  step: string;
}

export interface ClusterStatus {
  namespace: string;
  name: string;
  provider: string;
  phase: 'Provisioning' | 'Provisioned' | 'Deleting' | 'Deleted' | 'Failed';
  version: string;
  endpoint: string;
  createdAt: string;
  controlPlane?: OwnerStatus;
  machineDeployments: OwnerStatus[];
  conditions: Condition[];
  step: string;
}

const cond = (type: string, ok: boolean, reason: string, message?: string): Condition =>
  ok ? { type, status: 'True' } : { type, status: 'False', reason, ...(message ? { message } : {}) };

/** The one place a cluster's status is computed. */
export function clusterStatus(state: ClusterState): ClusterStatus {
  const cp = state.children[`KubeadmControlPlane/${state.model.controlPlane.name}`];
  const mds = state.model.machineDeployments.map((md) => state.children[`MachineDeployment/${md.name}`]).filter((s): s is OwnerStatus => !!s);
  const cpAvailable = !!cp && cp.initialized && cp.readyReplicas > 0;
  const workersAvailable = state.model.machineDeployments.every((md) => {
    const s = state.children[`MachineDeployment/${md.name}`];
    return !!s && s.readyReplicas === s.replicas;
  });
  const conditions = [
    cond('InfrastructureReady', state.infrastructureReady, 'WaitingForInfrastructure'),
    cond('ControlPlaneInitialized', !!cp?.initialized, 'WaitingForControlPlane', cp?.step),
    cond('ControlPlaneAvailable', cpAvailable, 'ControlPlaneNotAvailable', cp?.step),
    cond('WorkersAvailable', workersAvailable, 'WorkersNotAvailable', mds.filter((s) => s.readyReplicas !== s.replicas).map((s) => `${s.name}: ${s.step}`).join('; ') || undefined),
  ];
  const available = conditions.every((c) => c.status === 'True');
  conditions.unshift(cond('Available', available, conditions.find((c) => c.status !== 'True')?.type ?? '', state.step));
  const failed = [cp, ...mds].some((s) => s?.machines.some((m) => m.phase === 'Failed'));
  return {
    namespace: state.facts.namespace, name: state.facts.name, provider: state.facts.provider,
    phase: state.deleted ? 'Deleted' : state.deleting ? 'Deleting' : failed ? 'Failed' : available ? 'Provisioned' : 'Provisioning',
    version: state.model.controlPlane.version, endpoint: state.facts.endpoint, createdAt: state.createdAt,
    controlPlane: cp, machineDeployments: mds, conditions, step: state.step,
  };
}
