import type { ClusterView } from '../contract/cluster';
import type { Condition } from '../contract/machine';
import type { OwnerStatus } from '../contract/owner';

/** A condition as Cluster API v1beta2 writes it (metav1.Condition): a reason always, and when it last changed. */
export interface ApiCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message?: string;
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

/** Each owner's replica counts, summed as Cluster API sums them into status.controlPlane and status.workers. */
function replicaCounts(owners: (OwnerStatus | undefined)[]) {
  const present = owners.filter((o): o is OwnerStatus => !!o);
  const sum = (f: (o: OwnerStatus) => number) => present.reduce((n, o) => n + f(o), 0);
  return {
    desiredReplicas: sum((o) => o.replicas),
    replicas: sum((o) => o.machines.filter((m) => !m.deleting).length),
    readyReplicas: sum((o) => o.readyReplicas),
    availableReplicas: sum((o) => o.availableReplicas),
    upToDateReplicas: sum((o) => o.updatedReplicas),
  };
}

/**
 * The Cluster object's status from the cluster workflow's: v1beta2 conditions (each with a reason and the
 * time it last changed, kept from `previous` while its status holds), phase, initialization and replica
 * counts. `observedGeneration` is the object's generation only when `observed` says the workflows carry
 * out its current spec; otherwise the one written before stays, so no one reads a stale status as current.
 */
export function clusterObjectStatus(
  view: ClusterView,
  previous: { conditions?: ApiCondition[]; observedGeneration?: number } | undefined,
  generation: number,
  observed: boolean,
  now: string,
): Record<string, unknown> {
  const rollingOut = view.pending.filter((p) => p.reason === 'RollingOut');
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
  ];
  const conditions = own.map((c): ApiCondition => {
    const before = previous?.conditions?.find((p) => p.type === c.type);
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
      ...(c.message ? { message: c.message } : {}),
      lastTransitionTime: before && before.status === c.status ? before.lastTransitionTime : now,
      ...(observed ? { observedGeneration: generation } : {}),
    };
  });
  const observedGeneration = observed ? generation : previous?.observedGeneration;
  return {
    phase: view.phase,
    conditions,
    initialization: {
      infrastructureProvisioned: view.conditions.some((c) => c.type === 'InfrastructureReady' && c.status === 'True'),
      controlPlaneInitialized: !!view.controlPlane?.initialized,
    },
    controlPlane: replicaCounts([view.controlPlane]),
    workers: replicaCounts(view.machineDeployments),
    ...(observedGeneration !== undefined ? { observedGeneration } : {}),
  };
}
