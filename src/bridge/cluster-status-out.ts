import type { ClusterView, PendingChange } from '../contract/cluster';
import type { Condition } from '../contract/machine';
import type { OwnerStatus } from '../contract/owner';
import { compareVersions } from '../contract/upgrade-plan';

/** A condition as Cluster API v1beta2 writes it (metav1.Condition): a reason always, and when it last changed. */
export interface ApiCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

/** Cluster API's reason for a condition that holds, where capt's own condition carries none. */
const trueReasons: Record<string, string> = {
  Available: 'Available',
  InfrastructureReady: 'Ready',
  ControlPlaneInitialized: 'Initialized',
  ControlPlaneAvailable: 'Available',
  WorkersAvailable: 'Available',
};
/** A reason the API accepts (metav1.Condition's pattern): capt's own where it fits. */
const validReason = (r: string | undefined, fallback: string) =>
  r && /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/.test(r) ? r : fallback;

/** Version changes held back: for the control plane's, then (a ClusterClass cluster's) for the topology's order. */
const heldBack = (p: PendingChange) => p.reason === 'HeldForControlPlane' || p.reason === 'HeldForTopologyOrder';

/**
 * The version change an owner has not received because it is held back: the objects already ask for it, so
 * none of the owner's machines is up to date, though its workflow still counts them so.
 */
export const heldVersionChange = (view: ClusterView, owner: OwnerStatus): PendingChange | undefined =>
  view.pending.find((p) => heldBack(p) && p.kind === owner.kind && p.name === owner.name);

/**
 * A list the status had and no longer has is written null: a merge patch keeps what it does not name, and Cluster
 * API's schema allows no empty list there.
 */
const listField = <T>(key: string, list: T[], before: Record<string, unknown> | undefined) =>
  list.length ? { [key]: list } : before?.[key] !== undefined ? { [key]: null } : {};

/** The Kubernetes versions the machines run, with how many run each (status.controlPlane/workers.versions). */
function versionsOf(owners: OwnerStatus[]) {
  const counts = new Map<string, number>();
  for (const m of owners.flatMap((o) => o.machines.filter((x) => !x.deleting)))
    counts.set(m.version, (counts.get(m.version) ?? 0) + 1);
  return [...counts].sort(([a], [b]) => compareVersions(a, b)).map(([version, replicas]) => ({ version, replicas }));
}

/** Cluster API's TopologyReconciled for a Cluster with spec.topology, its reasons and the first line of its message. */
export const topologyReconciledType = 'TopologyReconciled';

/**
 * Whether the objects are what the topology asks for (a refused topology is ReconcileFailed, written by the bridge):
 * False while paused, deleting, or upgrading (a machine not at the topology's version, or a step of its plan left).
 */
function topologyReconciled(view: ClusterView): Condition {
  const condition = (reason: string, message: string): Condition => ({
    type: topologyReconciledType,
    status: 'False',
    reason,
    message,
  });
  if (view.phase === 'Deleting') return condition('Deleting', 'Cluster is deleting');
  if (view.paused) return condition('Paused', 'Cluster spec.paused is set to true');
  const owners = [view.controlPlane, ...view.machineDeployments].filter((o): o is OwnerStatus => !!o);
  const behind = owners.filter((o) => o.machines.some((m) => !m.deleting && m.version !== view.version));
  const plan = [...(view.upgradePlan?.controlPlane ?? []), ...(view.upgradePlan?.workers ?? [])];
  if (!behind.length && !plan.length && !view.pending.some(heldBack))
    return { type: topologyReconciledType, status: 'True', reason: 'ReconcileSucceeded' };
  const lines = behind.map((o) => `\n  * ${o.kind} ${o.name} upgrading to version ${view.version}`);
  return condition('ClusterUpgrading', `Cluster is upgrading to ${view.version}${lines.join('')}`);
}

/**
 * The Cluster's status.controlPlane or status.workers: the owners' replica counts summed as Cluster API sums them,
 * the versions in use, and what is left of a ClusterClass cluster's upgrade plan.
 */
function clusterGroupStatus(
  owners: (OwnerStatus | undefined)[],
  view: ClusterView,
  plan: string[] | undefined,
  before: Record<string, unknown> | undefined,
) {
  const present = owners.filter((o): o is OwnerStatus => !!o);
  return {
    ...replicaCounts(owners, view),
    ...listField('versions', versionsOf(present), before),
    ...listField(
      'upgradePlan',
      (plan ?? []).map((version) => ({ version })),
      before,
    ),
  };
}

/** Each owner's replica counts, summed as Cluster API sums them into status.controlPlane and status.workers. */
function replicaCounts(owners: (OwnerStatus | undefined)[], view: ClusterView) {
  const present = owners.filter((o): o is OwnerStatus => !!o);
  const sum = (f: (o: OwnerStatus) => number) => present.reduce((n, o) => n + f(o), 0);
  return {
    desiredReplicas: sum((o) => o.replicas),
    replicas: sum((o) => o.machines.filter((m) => !m.deleting).length),
    readyReplicas: sum((o) => o.readyReplicas),
    availableReplicas: sum((o) => o.availableReplicas),
    upToDateReplicas: sum((o) => (heldVersionChange(view, o) ? 0 : o.updatedReplicas)),
  };
}

/**
 * capt's conditions as v1beta2 writes them: each with a reason (Cluster API's own where capt's holds none) and
 * the time it last changed, kept from `previous` while its status holds; `observedGeneration` when observed.
 */
export function apiConditions(
  own: Condition[],
  previous: ApiCondition[] | undefined,
  observedGeneration: number | undefined,
  now: string,
): ApiCondition[] {
  return own.map((c): ApiCondition => {
    const before = previous?.find((p) => p.type === c.type);
    const reason =
      c.status === 'True'
        ? validReason(c.reason, trueReasons[c.type] ?? c.type)
        : c.type === 'Available'
          ? 'NotAvailable'
          : validReason(c.reason, `Not${c.type}`);
    return {
      type: c.type,
      status: c.status,
      reason,
      // v1beta2 requires a message, empty when there is nothing to say.
      message: c.message ?? '',
      lastTransitionTime: before && before.status === c.status ? before.lastTransitionTime : now,
      ...(observedGeneration !== undefined ? { observedGeneration } : {}),
    };
  });
}

/** What an object's status had, which the next one keeps where nothing changed. */
export interface PreviousStatus {
  conditions?: ApiCondition[];
  observedGeneration?: number;
  /** A Cluster's. */
  controlPlane?: Record<string, unknown>;
  workers?: Record<string, unknown>;
}

/**
 * Whether the workflows carry out the object's current spec (`observed`) and its generation: then
 * observedGeneration is that generation; otherwise the one written before stays, so no one reads a stale
 * status as current (Cluster API's issue #13738).
 */
export interface Observation {
  generation: number;
  observed: boolean;
  now: string;
}

export const observedOf = (o: Observation, previous: PreviousStatus | undefined) =>
  o.observed ? o.generation : previous?.observedGeneration;

/** The Cluster object's status from the cluster workflow's: conditions, phase, initialization and replica counts. */
export function clusterObjectStatus(
  view: ClusterView,
  previous: PreviousStatus | undefined,
  o: Observation,
): Record<string, unknown> {
  const rollingOut = view.pending.filter((p) => p.reason === 'RollingOut' || heldBack(p));
  const own: Condition[] = [
    ...view.conditions.filter((c) => c.type !== 'Paused'),
    {
      type: 'RollingOut',
      status: rollingOut.length ? 'True' : 'False',
      reason: rollingOut.length ? 'RollingOut' : 'NotRollingOut',
      ...(rollingOut.length ? { message: rollingOut.map((p) => `${p.kind} ${p.name}: ${p.message}`).join('; ') } : {}),
    },
    view.paused
      ? {
          type: 'Paused',
          status: 'True',
          reason: 'Paused',
          message: 'spec.paused or the cluster.x-k8s.io/paused annotation',
        }
      : { type: 'Paused', status: 'False', reason: 'NotPaused' },
    view.phase === 'Deleting'
      ? { type: 'Deleting', status: 'True', reason: 'Deleting', message: view.step }
      : { type: 'Deleting', status: 'False', reason: 'NotDeleting' },
    ...(view.clusterClass ? [topologyReconciled(view)] : []),
  ];
  const observedGeneration = observedOf(o, previous);
  return {
    phase: view.phase,
    conditions: apiConditions(own, previous?.conditions, o.observed ? o.generation : undefined, o.now),
    initialization: {
      infrastructureProvisioned: view.conditions.some((c) => c.type === 'InfrastructureReady' && c.status === 'True'),
      controlPlaneInitialized: !!view.controlPlane?.initialized,
    },
    controlPlane: clusterGroupStatus([view.controlPlane], view, view.upgradePlan?.controlPlane, previous?.controlPlane),
    workers: clusterGroupStatus(view.machineDeployments, view, view.upgradePlan?.workers, previous?.workers),
    ...(observedGeneration !== undefined ? { observedGeneration } : {}),
  };
}

/**
 * A KubeadmControlPlane's or MachineDeployment's status from its workflow's: the replica counts the scale
 * subresource and cluster-autoscaler read (with the label selector of its machines), conditions, and for
 * the control plane its version and initialization.
 */
export function ownerObjectStatus(
  owner: OwnerStatus,
  view: ClusterView,
  selector: string,
  previous: PreviousStatus | undefined,
  o: Observation,
): Record<string, unknown> {
  const { replicas, readyReplicas, availableReplicas, upToDateReplicas } = replicaCounts([owner], view);
  const held = heldVersionChange(view, owner);
  const conditions = held
    ? [
        ...owner.conditions.filter((c) => c.type !== 'RollingOut'),
        { type: 'RollingOut', status: 'True' as const, reason: held.reason, message: held.message },
      ]
    : owner.conditions;
  const observedGeneration = observedOf(o, previous);
  const live = owner.machines.filter((m) => !m.deleting).length;
  return {
    selector,
    replicas,
    readyReplicas,
    availableReplicas,
    upToDateReplicas,
    conditions: apiConditions(conditions, previous?.conditions, o.observed ? o.generation : undefined, o.now),
    ...(owner.kind === 'KubeadmControlPlane'
      ? { version: owner.version, initialization: { controlPlaneInitialized: owner.initialized } }
      : {
          phase:
            owner.failedMachines > 0
              ? 'Failed'
              : live < owner.replicas
                ? 'ScalingUp'
                : live > owner.replicas
                  ? 'ScalingDown'
                  : 'Running',
        }),
    ...(observedGeneration !== undefined ? { observedGeneration } : {}),
  };
}
