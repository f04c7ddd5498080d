import { topologyHoldReason } from './topology-upgrade';
import type { ClusterStepReason } from '../../src/contract/steps';
import type { ClusterModel } from '../../src/api/model';
import { waitingToStart, type ClusterStatus, type PendingChange } from '../../src/contract/cluster';
import { ownerWorkflowId } from '../../src/contract/workflow-ids';
import type { Condition } from '../../src/contract/machine';
import type { ClusterFacts, MachineRecord, OwnerSummary } from '../../src/contract/owner';
import { isRunning } from '../shared/machine-pool';
import type { OwnerRecovery } from '../../src/contract/owner-recovery';
import type { UnknownSignal } from '../../src/contract/unknown-signals';
import { unknownSignalsField } from '../shared/unknown-signals';
import { maintenanceWindowAnnotation } from '../../src/contract/maintenance-window';

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
  /** `step` for programs; absent in runs from before it was kept. */
  stepReason?: ClusterStepReason;
  /** Grows with every apply that changes something; 1 at creation. */
  generation?: number;
  /** Per owner (`kind/name`), the generation that last changed it. */
  changedAt?: Record<string, number>;
  /** MachineDeployments whose new version waits until the control plane runs its own. */
  held?: string[];
  /**
   * A chained upgrade under way (a ClusterClass listing spec.kubernetesVersions): the version the control plane
   * was last given and those still to give it, in order. The workers follow once it runs the last.
   */
  upgrade?: { controlPlaneAt: string; controlPlane: string[] };
  /** MachineDeployments started so far (they start once the control plane is initialised). */
  started?: string[];
  /** The standalone Machines started and not yet gone, as compact records (the cluster is their owner). */
  machines?: MachineRecord[];
  /** Owners whose workflow was lost and rebuilt, newest last (a few kept). */
  recoveries?: OwnerRecovery[];
  /** Signals without a handler, as received (see unknown-signals.ts). */
  unknownSignals?: UnknownSignal[];
  /**
   * WorkersAvailable follows each MachineDeployment's Available condition, as Cluster API's does. Absent in
   * clusters started before: they required every replica running and none beyond, so a surge read as unavailable.
   */
  workersByAvailability?: boolean;
}

export const ownerKey = (kind: PendingChange['kind'], name: string) => `${kind}/${name}`;

/** The generation that last changed an owner (1: as created). */
export const changedGeneration = (state: ClusterState, kind: PendingChange['kind'], name: string) =>
  state.changedAt?.[ownerKey(kind, name)] ?? 1;

/** The control plane's summary, and a MachineDeployment's. */
export const controlPlaneOf = (state: ClusterState) =>
  state.children[ownerKey('KubeadmControlPlane', state.model.controlPlane.name)];
export const machineDeploymentOf = (state: ClusterState, name: string) =>
  state.children[ownerKey('MachineDeployment', name)];

/** The version the control plane is to run now: a chained upgrade's current step, else the applied one. */
export const controlPlaneTarget = (state: ClusterState) =>
  state.upgrade?.controlPlaneAt ?? state.model.controlPlane.version;

/** The control plane runs `version` on every machine, with every change sent to it. */
export const controlPlaneRuns = (state: ClusterState, version: string) => {
  const cp = controlPlaneOf(state);
  return (
    !!cp &&
    cp.version === version &&
    cp.rolloutComplete &&
    cp.observedGeneration >= changedGeneration(state, 'KubeadmControlPlane', cp.name)
  );
};

/** The control plane runs the applied version on every machine: held worker versions may go. */
export const controlPlaneUpgraded = (state: ClusterState) =>
  !state.upgrade && controlPlaneRuns(state, state.model.controlPlane.version);

/**
 * What is left of a ClusterClass cluster's upgrade plan, as Cluster API's status shows it: the versions not yet
 * given to the control plane, and to the workers (which take the target once the control plane runs it).
 */
function upgradePlanOf(state: ClusterState): ClusterStatus['upgradePlan'] {
  if (!state.model.topology) return undefined;
  const controlPlane = state.upgrade?.controlPlane ?? [];
  const workers = state.held?.length ? [state.model.controlPlane.version] : [];
  return controlPlane.length || workers.length ? { controlPlane, workers } : undefined;
}

/** A MachineDeployment that has not yet carried out its last change: it counts against a topology's upgrade concurrency. */
export const machineDeploymentUpgrading = (state: ClusterState, name: string) => {
  const summary = machineDeploymentOf(state, name);
  return (
    !summary ||
    summary.observedGeneration < changedGeneration(state, 'MachineDeployment', name) ||
    !summary.rolloutComplete
  );
};

/**
 * The owners an applied change has not yet been carried out by: held for the control plane, not
 * received yet, or still rolling out (machines not all on the new template, or not all running).
 */
function pendingChanges(state: ClusterState): PendingChange[] {
  const pending = ownerChanges(state);
  // Paused, whatever an owner would do next waits for the unpause first.
  return state.model.paused
    ? pending.map((p) => ({
        ...p,
        reason: 'ClusterPaused',
        message: 'the cluster is paused; nothing is carried out until it is unpaused',
      }))
    : pending;
}

function ownerChanges(state: ClusterState): PendingChange[] {
  const cpVersion = state.model.controlPlane.version;
  const owners = [
    { kind: 'KubeadmControlPlane' as const, name: state.model.controlPlane.name },
    ...state.model.machineDeployments.map((md) => ({ kind: 'MachineDeployment' as const, name: md.name })),
  ];
  return owners.flatMap(({ kind, name }): PendingChange[] => {
    const generation = changedGeneration(state, kind, name);
    const summary = state.children[ownerKey(kind, name)];
    const workflow = ownerWorkflowId(kind, state.facts.namespace, name);
    if (state.held?.includes(name)) {
      const version = state.model.machineDeployments.find((m) => m.name === name)?.template.version;
      const topology = state.model.topology;
      // The control plane runs it: a ClusterClass cluster's workers then wait for their turn in the topology.
      if (topology && controlPlaneUpgraded(state))
        return [
          {
            kind,
            name,
            generation,
            reason: 'HeldForTopologyOrder',
            message: `${version} ${topologyHoldReason(topology, state.held, name, (n) => machineDeploymentUpgrading(state, n))}`,
          },
        ];
      return [
        {
          kind,
          name,
          generation,
          reason: 'HeldForControlPlane',
          message: `${version} waits until the control plane runs ${cpVersion} (kubelets may not be newer than the apiserver)${state.upgrade ? `; a chained upgrade: the control plane is given ${state.upgrade.controlPlaneAt}, then ${state.upgrade.controlPlane.join(', then ')}` : ''}`,
        },
      ];
    }
    if (!summary || summary.observedGeneration < generation)
      return [
        {
          kind,
          name,
          generation,
          reason: 'NotReceived',
          message: `generation ${generation} has not reached workflow ${workflow} yet`,
        },
      ];
    if (!summary.rolloutComplete || !summary.ready)
      return [
        {
          kind,
          name,
          generation,
          reason: 'RollingOut',
          message: `rolling out ${summary.version} (revision ${summary.revision}); see workflow ${workflow}`,
        },
      ];
    return [];
  });
}

const cond = (type: string, ok: boolean, reason: string, message?: string): Condition =>
  ok ? { type, status: 'True' } : { type, status: 'False', reason, ...(message ? { message } : {}) };

/** The one place a cluster's status is computed. */
export function clusterStatus(state: ClusterState): ClusterStatus {
  const cp = controlPlaneOf(state);
  const mds = state.model.machineDeployments
    .map((md) => machineDeploymentOf(state, md.name))
    .filter((s): s is OwnerSummary => !!s);
  // The details are each owner's own (its status query and UI page): the cluster names which one to look at.
  const notReady = (s: OwnerSummary) =>
    `${s.kind} ${s.name} is not ready (see workflow ${ownerWorkflowId(s.kind, s.namespace, s.name)})`;
  const standaloneReady = (state.model.machines ?? []).every((m) =>
    state.machines?.some((r) => r.name === m.name && isRunning(r)),
  );
  const workerOk = (s: OwnerSummary | undefined) => !!(state.workersByAvailability ? s?.available : s?.ready);
  const workerProblem = (s: OwnerSummary) =>
    state.workersByAvailability
      ? `${s.kind} ${s.name} is not available (see workflow ${ownerWorkflowId(s.kind, s.namespace, s.name)})`
      : notReady(s);
  const workersReady =
    state.model.machineDeployments.every((md) => workerOk(machineDeploymentOf(state, md.name))) && standaloneReady;
  const conditions = [
    cond('InfrastructureReady', state.infrastructureReady, 'WaitingForInfrastructure'),
    cond('ControlPlaneInitialized', !!cp?.initialized, 'WaitingForControlPlane', cp && notReady(cp)),
    cond('ControlPlaneAvailable', !!cp?.available, 'ControlPlaneNotAvailable', cp && notReady(cp)),
    cond(
      'WorkersAvailable',
      workersReady,
      'WorkersNotAvailable',
      mds
        .filter((s) => !workerOk(s))
        .map(workerProblem)
        .join('; ') || undefined,
    ),
  ];
  const available = conditions.every((c) => c.status === 'True');
  conditions.unshift(cond('Available', available, conditions.find((c) => c.status !== 'True')?.type ?? '', state.step));
  if (state.model.paused)
    conditions.push({
      type: 'Paused',
      status: 'True',
      reason: 'Paused',
      message: 'Cluster spec.paused or cluster.x-k8s.io/paused: nothing is carried out until unpaused',
    });
  const failed = [cp, ...mds].some((s) => (s?.failedMachines ?? 0) > 0);
  const generation = state.generation ?? 1;
  const pending = state.deleting ? [] : pendingChanges(state);
  const plan = upgradePlanOf(state);
  // The newest generation every change up to which has reached its owner.
  const unobserved = pending.filter(waitingToStart).map((p) => p.generation - 1);
  return {
    namespace: state.facts.namespace,
    name: state.facts.name,
    provider: state.facts.provider,
    phase: state.deleted
      ? 'Deleted'
      : state.deleting
        ? 'Deleting'
        : failed
          ? 'Failed'
          : available
            ? 'Provisioned'
            : 'Provisioning',
    version: state.model.controlPlane.version,
    endpoint: state.facts.endpoint,
    createdAt: state.createdAt,
    controlPlane: cp,
    machineDeployments: mds,
    machines: state.machines ?? [],
    conditions,
    step: state.step,
    stepReason: state.stepReason ?? 'Starting',
    paused: state.model.paused,
    ...(state.model.topology && { clusterClass: state.model.topology.class }),
    ...maintenanceWindowField(state.model),
    ...(plan && { upgradePlan: plan }),
    generation,
    observedGeneration: Math.min(generation, ...unobserved),
    pending,
    recoveries: recoveriesOf(state),
    ...unknownSignalsField(state.unknownSignals),
  };
}

/** The rebuilt owners, each with what it adopted once its summary says so. */
function recoveriesOf(state: ClusterState): OwnerRecovery[] {
  const recoveries = state.recoveries ?? [];
  return recoveries.map((r, i) => {
    // An owner rebuilt twice: its summary tells of the newest rebuild only.
    const newest = !recoveries.slice(i + 1).some((o) => o.kind === r.kind && o.name === r.name);
    const adopted = newest ? state.children[ownerKey(r.kind, r.name)]?.adoptedMachines : undefined;
    return adopted === undefined ? r : { ...r, adopted };
  });
}

/** The cluster's maintenance window, and which owners wait for it: shown even when none does, so it is never unseen. */
function maintenanceWindowField(model: ClusterModel): Pick<ClusterStatus, 'maintenanceWindow'> {
  const window = model.annotations?.[maintenanceWindowAnnotation];
  if (window === undefined) return {};
  const held = [
    ...(model.controlPlane.maintenanceWindow ? [`KubeadmControlPlane/${model.controlPlane.name}`] : []),
    ...model.machineDeployments.filter((md) => md.maintenanceWindow).map((md) => `MachineDeployment/${md.name}`),
  ];
  return { maintenanceWindow: { window, held } };
}
