import { getExternalWorkflowHandle, proxyActivities, type ExternalWorkflowHandle } from '@temporalio/workflow';
import type * as coreActivities from '../../activities';
import type { ProviderActivities } from '../../providers/provider-activities';
import { providerTaskQueue } from '../../src/contract/task-queues';
import type { MachineDeploymentModel } from '../../src/api/model';
import type { OwnerRef, OwnerSummary } from '../../src/contract/owner';
import type { OwnerCheck, RepairReport } from '../../src/contract/owner-recovery';
import { ownerWorkflowId } from '../../src/contract/workflow-ids';
import type { OwnerRebuild } from '../shared/owner-adoption';
import { ownerKey, type ClusterState } from './cluster-status';
import { activityRetry } from '../shared/activity-retry';

/** Rebuilds kept in the cluster's status. */
const recoveriesKept = 10;

/**
 * The replicas a rebuilt owner keeps: the cluster's spec when it holds a change the lost owner never
 * received, otherwise what the lost owner last reported (a `capt scale` goes to the owner, not the cluster).
 */
export function rebuiltReplicas(specReplicas: number, changedAt: number, previous: OwnerSummary | undefined): number {
  return previous && previous.observedGeneration >= changedAt ? previous.replicas : specReplicas;
}

/**
 * The cluster's side of recovery: an owner whose workflow is lost (terminated, failed, timed out) is
 * started again under the same workflow ID, so its machines' reports reach it, and adopts what it finds
 * (owner-adoption.ts). `start` starts an owner workflow the way the cluster does, with `rebuild` and, for
 * a MachineDeployment no longer in the spec (pruned), its last spec.
 */
export function ownerSupervision(o: {
  state: ClusterState;
  start: (owner: OwnerRef, rebuild: OwnerRebuild, spec?: MachineDeploymentModel) => Promise<void>;
  refresh: () => void;
}) {
  const { state } = o;
  const { namespace, name: cluster } = state.facts;
  const checks = proxyActivities<typeof coreActivities>({
    startToCloseTimeout: '10m',
    heartbeatTimeout: '30s',
    retry: activityRetry,
  });
  const provider = proxyActivities<ProviderActivities>({
    taskQueue: providerTaskQueue(state.facts.provider),
    startToCloseTimeout: '1m',
    retry: activityRetry,
  });
  const workflowId = (owner: OwnerRef) => ownerWorkflowId(owner.kind, namespace, owner.name);

  async function rebuild(
    owner: OwnerRef,
    cause: string,
    opts: { deleting?: { clusterDeleting: boolean }; spec?: MachineDeploymentModel } = {},
  ): Promise<void> {
    const previous = state.children[ownerKey(owner.kind, owner.name)];
    state.recoveries = [
      ...(state.recoveries ?? []),
      { kind: owner.kind, name: owner.name, cause, at: new Date().toISOString() },
    ].slice(-recoveriesKept);
    o.refresh();
    await o.start(
      owner,
      { cause, ...(previous ? { previous } : {}), ...(opts.deleting ? { deleting: opts.deleting } : {}) },
      opts.spec,
    );
  }

  /** Rebuilds the owners among `owners` whose workflow does not run; returns how many. */
  async function rebuildLost(
    owners: OwnerRef[],
    foundBy: string,
    opts: { deleting?: { clusterDeleting: boolean }; spec?: MachineDeploymentModel } = {},
  ): Promise<number> {
    if (!owners.length) return 0;
    const states = await checks.workflowStates({ workflowIds: owners.map(workflowId) });
    const lost = owners.filter((owner) => states[workflowId(owner)] !== 'RUNNING');
    for (const owner of lost)
      await rebuild(owner, `workflow ${workflowId(owner)} ${states[workflowId(owner)]}; found by ${foundBy}`, opts);
    return lost.length;
  }

  return {
    rebuildLost,

    /**
     * Sends a message to an owner. When that fails because the owner's workflow is lost, the owner is
     * rebuilt instead: from the cluster's spec, which holds what the message carried.
     */
    async tell(
      owner: OwnerRef,
      send: (handle: ExternalWorkflowHandle) => Promise<void>,
      foundBy: string,
      opts: { deleting?: { clusterDeleting: boolean }; spec?: MachineDeploymentModel } = {},
    ): Promise<void> {
      try {
        await send(getExternalWorkflowHandle(workflowId(owner)));
      } catch (err) {
        if (!(await rebuildLost([owner], foundBy, opts))) throw err;
      }
    },

    /**
     * `capt repair cluster`: every owner's workflow checked, its machine workflows and the provider's machines
     * counted, and the lost owners rebuilt unless `dryRun`.
     */
    async repair(owners: OwnerRef[], dryRun: boolean): Promise<RepairReport> {
      const [states, machines, providerMachines] = await Promise.all([
        checks.workflowStates({ workflowIds: owners.map(workflowId) }),
        checks.countClusterMachines({ namespace, cluster }),
        provider.countMachineInfrastructure(namespace, cluster),
      ]);
      const checked: OwnerCheck[] = owners.map((owner) => {
        const found = states[workflowId(owner)]!;
        const action = found === 'RUNNING' ? 'none' : dryRun ? 'would rebuild' : 'rebuilt';
        return {
          ...owner,
          workflowId: workflowId(owner),
          state: found,
          machines: machines[`${owner.kind}/${owner.name}`] ?? 0,
          action,
        };
      });
      // A cluster being deleted rebuilds its owners to delete their machines.
      const deleting = state.deleting ? { clusterDeleting: true } : undefined;
      for (const c of checked.filter((c) => c.action === 'rebuilt')) {
        await rebuild(c, `workflow ${c.workflowId} ${c.state}; found by capt repair cluster`, { deleting });
      }
      return {
        namespace,
        cluster,
        dryRun,
        owners: checked,
        standaloneMachines: machines.Cluster ?? 0,
        providerMachines,
      };
    },
  };
}
