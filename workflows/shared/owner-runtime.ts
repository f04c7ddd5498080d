import { ApplicationFailure, condition, getExternalWorkflowHandle, setCurrentDetails, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import {
  childChangedSignal, deleteOwnerSignal, ownerStatusQuery, rolloutHistoryQuery, rolloutPauseUpdate, rolloutRestartUpdate, rolloutUndoUpdate, scaleSignal, scaleUpdate,
} from '../../src/temporal/cluster-messages';
import { machineChangedSignal } from '../../src/temporal/machine-messages';
import { CaptCluster, CaptKind, CaptKubernetesVersion, CaptNamespace, CaptPhase, CaptProvider } from '../../src/temporal/search-attributes';
import { deletePoolMachine, recordMachineStatus, type PoolMachine } from './machine-pool';
import type { ClusterFacts, OwnerStatus } from './owner-status';
import type { Revision } from './revisions';

/** The state every machine owner (control plane, MachineDeployment) keeps, whatever else it holds. */
export interface OwnerState {
  spec: { replicas: number };
  machines: PoolMachine[];
  deleting?: { clusterDeleting: boolean };
  step: string;
  /** How many status reports went to the cluster. */
  reports?: number;
  paused?: boolean;
}

export interface OwnerRuntime {
  refresh(): OwnerStatus;
  setStep(step: string): void;
  /** Deletes every machine (`what` names them in the step), waits until all are gone, then sends the last report. */
  deleteAllAndFinish(what: string): Promise<OwnerStatus>;
  /** Grows with every message received: a reconcile loop waits for it to move. */
  changes(): number;
  /** For a workflow's own handlers: counts the message and publishes the status. */
  changed(): OwnerStatus;
}

/**
 * What the control plane and MachineDeployment workflows share: their handlers (status query, machine
 * reports, scale, delete) and the one place their status is published (current details, search
 * attributes, and a sequenced report to the cluster when something changed).
 */
export function ownerRuntime(opts: {
  kind: OwnerStatus['kind'];
  facts: ClusterFacts;
  owner: string;
  state: OwnerState;
  status: () => OwnerStatus;
  validateReplicas: (replicas: number) => void;
  /** Rollout history, oldest first; the last is the current template. */
  revisions: () => Revision[];
  /** Makes `target`'s template current again (undo), or the current one anew (restart, a new restartedAt), as a new revision. */
  reapply: (target: Revision, cause: string, restartedAt: string | undefined) => void;
  /** Refuses an undo the kind cannot take (the control plane: a downgrade). */
  validateUndo?: (target: Revision) => void;
}): OwnerRuntime {
  const { state, facts } = opts;
  let published = '';
  let changes = 0;
  const report = (status: OwnerStatus) => {
    state.reports = (state.reports ?? 0) + 1;
    return { ...status, sequence: state.reports };
  };
  const refresh = () => {
    const status = opts.status();
    setCurrentDetails(`**${status.readyReplicas}/${status.replicas} machines running** (${status.version}): ${state.step}`);
    const key = JSON.stringify([status.readyReplicas, status.replicas, status.initialized, status.deleted, status.step, status.machines.map((m) => m.phase)]);
    if (key === published) return status;
    published = key;
    const sequenced = report(status);
    void getExternalWorkflowHandle(opts.owner).signal(childChangedSignal, sequenced).catch(() => undefined);
    upsertSearchAttributes([
      { key: CaptKind, value: opts.kind }, { key: CaptNamespace, value: facts.namespace }, { key: CaptCluster, value: facts.name },
      { key: CaptPhase, value: state.deleting ? 'Deleting' : status.readyReplicas === status.replicas ? 'Ready' : 'Scaling' },
      { key: CaptKubernetesVersion, value: status.version }, { key: CaptProvider, value: facts.provider },
    ]);
    return sequenced;
  };
  const changed = () => {
    changes++;
    return refresh();
  };
  const setStep = (step: string) => {
    state.step = step;
    refresh();
  };
  const scale = (replicas: number) => {
    state.spec.replicas = replicas;
    return changed();
  };
  setHandler(ownerStatusQuery, () => opts.status());
  setHandler(machineChangedSignal, (status) => {
    state.machines = recordMachineStatus(state.machines, status, new Date().toISOString());
    changed();
  });
  setHandler(scaleUpdate, scale, { validator: opts.validateReplicas });
  setHandler(scaleSignal, (replicas) => void scale(replicas));
  setHandler(deleteOwnerSignal, (request) => {
    state.deleting ??= request;
    changed();
  });

  const name = () => opts.status().name;
  // Undo means the revision before the current one unless a number is given.
  const undoTarget = (toRevision?: number) => (toRevision === undefined ? opts.revisions().at(-2) : opts.revisions().find((r) => r.revision === toRevision));
  setHandler(rolloutHistoryQuery, () => opts.revisions());
  setHandler(
    rolloutUndoUpdate,
    ({ toRevision }) => {
      const target = undoTarget(toRevision)!;
      opts.reapply(target, `undo to revision ${target.revision}`, target.restartedAt);
      return changed();
    },
    {
      validator: ({ toRevision }) => {
        const target = undoTarget(toRevision);
        if (!target || target === opts.revisions().at(-1)) {
          const known = opts.revisions().map((r) => r.revision).join(', ');
          const what = toRevision === undefined ? 'no previous revision' : target ? `revision ${toRevision} is already the current one` : `no revision ${toRevision}`;
          throw ApplicationFailure.create({ message: `${opts.kind} ${name()} has ${what}; revisions: ${known}`, type: 'InvalidSpec', nonRetryable: true });
        }
        opts.validateUndo?.(target);
      },
    },
  );
  setHandler(rolloutPauseUpdate, ({ paused }) => {
    state.paused = paused;
    return changed();
  }, { validator: (_request: { paused: boolean }) => refuseWhileDeleting('pause or resume') });
  setHandler(rolloutRestartUpdate, () => {
    opts.reapply(opts.revisions().at(-1)!, 'restart', new Date().toISOString());
    return changed();
  }, { validator: () => refuseWhileDeleting('restart') });
  function refuseWhileDeleting(what: string): void {
    if (state.deleting) throw ApplicationFailure.create({ message: `${opts.kind} ${name()} is being deleted; there is nothing to ${what}`, type: 'InvalidSpec', nonRetryable: true });
  }
  return {
    refresh,
    setStep,
    changes: () => changes,
    changed,
    deleteAllAndFinish: async (what) => {
      setStep(`deleting every ${what}`);
      for (const m of state.machines) {
        m.deleting = true;
        await deletePoolMachine(facts.namespace, m.name, !!state.deleting?.clusterDeleting);
      }
      await condition(() => state.machines.length === 0);
      // The last report is awaited so the cluster hears it before this run closes.
      state.step = 'deleted';
      const final = report(opts.status());
      await getExternalWorkflowHandle(opts.owner).signal(childChangedSignal, final).catch(() => undefined);
      return final;
    },
  };
}
