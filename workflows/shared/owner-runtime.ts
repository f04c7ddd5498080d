import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  getExternalWorkflowHandle,
  patched,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import {
  childChangedSignal,
  clusterPausedSignal,
  deleteOwnerSignal,
  machineReportSignal,
  machineReportsSignal,
  machineReportsUpdate,
  ownerMachineQuery,
  ownerStatusQuery,
  replaceMachinesUpdate,
  rolloutHistoryQuery,
  rolloutPauseUpdate,
  rolloutRestartUpdate,
  rolloutUndoUpdate,
  scaleSignal,
  scaleUpdate,
} from '../../src/contract/cluster-messages';
import type { MachineReport, MachineSpec } from '../../src/contract/machine';
import type {
  ClusterFacts,
  MachineOwnerKind,
  MachineRecord,
  OwnerAdoption,
  OwnerStatus,
  OwnerSummary,
  Revision,
} from '../../src/contract/owner';
import { captAttributes } from '../../src/contract/search-attributes';
import type { OwnerStepReason } from '../../src/contract/steps';
import type { Remediation } from '../../src/contract/health-check';
import {
  deletePoolMachines,
  newMachineNames,
  newRecord,
  recordMachineReports,
  reportComing,
  startPoolMachines,
  startsPerRun,
} from './machine-pool';
import { ownerSummary, summaryKey } from './owner-summary';
import { ownerStatusPage } from '../../src/contract/owner-status-page';
import { adoptMachines, holdEarlyReport, type AdoptionProgress } from './owner-adoption';
import { ownerContinueAsNewDue } from './build-upgrade';
import type { UnknownSignal } from '../../src/contract/unknown-signals';
import { unknownSignalsDetails } from './unknown-signals';

/** The state every machine owner (control plane, MachineDeployment) keeps, whatever else it holds. */
export interface OwnerState {
  spec: { replicas: number };
  machines: MachineRecord[];
  deleting?: { clusterDeleting: boolean };
  step: string;
  /** `step` for programs; absent in runs from before it was kept. */
  stepReason?: OwnerStepReason;
  /** How many summaries went to the cluster. */
  reports?: number;
  paused?: boolean;
  /** The cluster generation of the last spec or scale received from the cluster. */
  observedGeneration?: number;
  /** The newest remediations, newest last (a few kept). */
  remediations?: Remediation[];
  /** The cluster is paused: no machine is created, deleted or remediated until it is unpaused. */
  clusterPaused?: boolean;
  /** Rebuilt after its workflow was lost: the machines it adopted (see owner-adoption.ts). */
  adoption?: OwnerAdoption;
  /** While adopting: where the listing stands and the reports of machines not adopted yet. */
  adoptionProgress?: AdoptionProgress;
  /** Signals without a handler, as received (see unknown-signals.ts). */
  unknownSignals?: UnknownSignal[];
  /** Machines an operator asked to replace (replaceMachinesUpdate): outdated whatever their template, until gone. */
  replace?: string[];
}

export interface OwnerRuntime {
  refresh(): OwnerStatus;
  setStep(reason: OwnerStepReason, step: string): void;
  /** Records and starts new machines, concurrently; at most `startBudget()` of them in this run. Names come from `newNames`. */
  startMachines(machines: { spec: MachineSpec; templateHash: string; summary: string }[]): Promise<void>;
  /** Machines this run may still start before it must continue as new. */
  startBudget(): number;
  /** `count` fresh machine names no machine of this owner has. */
  newNames(base: string, count: number): string[];
  /** Marks the machines deleting and asks them to go, concurrently. */
  deleteMachines(names: string[]): Promise<void>;
  /** Continues as new when Temporal suggests it or this run started its share of children; call it in every loop. */
  checkpoint(): Promise<void>;
  /** While the cluster is paused: says so, waits, and returns true (the loop starts over); false when not paused. */
  whileClusterPaused(): Promise<boolean>;
  /** Deletes every machine (`what` names them in the step), waits until all are gone, then sends the last report. */
  deleteAllAndFinish(what: string): Promise<OwnerStatus>;
  /** Grows with every message received: a reconcile loop waits for it to move. */
  changes(): number;
  /** For a workflow's own handlers: counts the message and publishes the status. */
  changed(): OwnerStatus;
  /** Records that the cluster's spec of `generation` has arrived (signals may come out of order). */
  observe(generation: number): void;
  /** A rebuilt owner adopts the machines its lost workflow left, before it plans anything; `version` names the spec's. */
  adopt(version: () => string): Promise<void>;
  /** The machines an operator asked to replace that are still there (the rest are forgotten). */
  toReplace(): Set<string>;
}

/**
 * What the control plane and MachineDeployment workflows share: their handlers (status query, machine
 * reports, scale, delete, rollout operations), the one place their status is published, and the
 * continue-as-new discipline that keeps a run's history and pending children bounded.
 */
export function ownerRuntime(opts: {
  kind: MachineOwnerKind;
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
  /** The workflow's own continue-as-new with its current state. */
  continueAsNew: () => Promise<never>;
}): OwnerRuntime {
  const { state, facts } = opts;
  let reportedKey = '';
  let attributesKey = '';
  let changes = 0;
  let startedThisRun = 0;
  /** Batches of reports this run took by update. */
  let reportBatches = 0;
  const sendSummary = (status: OwnerStatus) => {
    state.reports = (state.reports ?? 0) + 1;
    const summary: OwnerSummary = { ...ownerSummary(status), sequence: state.reports };
    return getExternalWorkflowHandle(opts.owner)
      .signal(childChangedSignal, summary)
      .catch(() => undefined);
  };
  const refresh = () => {
    const status = opts.status();
    const hc = status.healthCheck;
    const last = hc?.remediations.at(-1);
    setCurrentDetails(
      `**${status.readyReplicas}/${status.replicas} machines running** (${status.version}): ${state.step}${hc ? `\n\nMachineHealthCheck ${hc.name}: ${hc.message}` : ''}${
        last
          ? `\n\nLast remediation: ${last.machine} at ${last.at} (${last.reason}: ${last.message}, since ${last.since})`
          : ''
      }${adoptionDetails(state.adoption)}${unknownSignalsDetails(state.unknownSignals)}`,
    );
    // The cluster hears only of changes to what it plans with, never of each machine's progress.
    const key = summaryKey(status);
    if (key !== reportedKey) {
      reportedKey = key;
      void sendSummary(status);
    }
    const phase = state.deleting ? 'Deleting' : status.ready ? 'Ready' : 'Scaling';
    if (`${phase}/${status.version}` !== attributesKey) {
      attributesKey = `${phase}/${status.version}`;
      upsertSearchAttributes(
        captAttributes({
          kind: opts.kind,
          namespace: facts.namespace,
          cluster: facts.name,
          phase,
          version: status.version,
          provider: facts.provider,
        }),
      );
    }
    return status;
  };
  const changed = () => {
    changes++;
    return refresh();
  };
  const setStep = (reason: OwnerStepReason, step: string) => {
    state.stepReason = reason;
    state.step = step;
    refresh();
  };
  /** What an update answers: the status without records, since history keeps every answer. */
  const recordless = (status: OwnerStatus) => ownerStatusPage(status, { limit: 0 });
  const scale = (replicas: number) => {
    state.spec.replicas = replicas;
    return changed();
  };
  setHandler(ownerStatusQuery, (page) => (page ? ownerStatusPage(opts.status(), page) : opts.status()));
  setHandler(ownerMachineQuery, (name) => state.machines.find((m) => m.name === name));
  // One report a signal from machines of older owners, several from the coalescer (machine-reports.ts): by signal
  // from machines of the build before reportsByUpdate, by update since.
  const applyReports = (reports: MachineReport[]) => {
    const applied = reports.filter((r) => !holdEarlyReport(state.adoptionProgress, state.machines, r));
    if (applied.length === 0) return;
    state.machines = recordMachineReports(state.machines, applied, new Date().toISOString());
    changed();
  };
  setHandler(machineReportSignal, (report) => applyReports([report]));
  setHandler(machineReportsSignal, applyReports);
  setHandler(machineReportsUpdate, (reports) => {
    reportBatches++;
    applyReports(reports);
  });
  setHandler(scaleUpdate, (replicas) => recordless(scale(replicas)), { validator: opts.validateReplicas });
  const observe = (generation: number) => {
    state.observedGeneration = Math.max(state.observedGeneration ?? 0, generation);
  };
  setHandler(scaleSignal, ({ replicas, generation }) => {
    observe(generation);
    scale(replicas);
  });
  setHandler(deleteOwnerSignal, (request) => {
    state.deleting ??= request;
    changed();
  });

  const name = () => opts.status().name;
  // Undo means the revision before the current one unless a number is given.
  const undoTarget = (toRevision?: number) =>
    toRevision === undefined ? opts.revisions().at(-2) : opts.revisions().find((r) => r.revision === toRevision);
  setHandler(clusterPausedSignal, ({ paused }) => {
    state.clusterPaused = paused;
    changed();
  });
  setHandler(rolloutHistoryQuery, () => opts.revisions());
  setHandler(
    rolloutUndoUpdate,
    ({ toRevision }) => {
      const target = undoTarget(toRevision)!;
      opts.reapply(target, `undo to revision ${target.revision}`, target.restartedAt);
      return recordless(changed());
    },
    {
      validator: ({ toRevision }) => {
        const target = undoTarget(toRevision);
        if (!target || target === opts.revisions().at(-1)) {
          const known = opts
            .revisions()
            .map((r) => r.revision)
            .join(', ');
          const what =
            toRevision === undefined
              ? 'no previous revision'
              : target
                ? `revision ${toRevision} is already the current one`
                : `no revision ${toRevision}`;
          throw ApplicationFailure.create({
            message: `${opts.kind} ${name()} has ${what}; revisions: ${known}`,
            type: 'InvalidSpec',
            nonRetryable: true,
          });
        }
        opts.validateUndo?.(target);
      },
    },
  );
  setHandler(
    rolloutPauseUpdate,
    ({ paused }) => {
      state.paused = paused;
      return recordless(changed());
    },
    { validator: (_request: { paused: boolean }) => refuseWhileDeleting('pause or resume') },
  );
  setHandler(
    rolloutRestartUpdate,
    () => {
      opts.reapply(opts.revisions().at(-1)!, 'restart', new Date().toISOString());
      return recordless(changed());
    },
    { validator: () => refuseWhileDeleting('restart') },
  );
  /** The machines this owner holds that are not being deleted. */
  const heldNames = () => new Set(state.machines.filter((m) => !m.deleting).map((m) => m.name));
  setHandler(
    replaceMachinesUpdate,
    ({ names }) => {
      state.replace = [...new Set([...(state.replace ?? []), ...names])];
      return recordless(changed());
    },
    {
      validator: ({ names }: { names: string[] }) => {
        refuseWhileDeleting('replace');
        const held = heldNames();
        const unknown = names.filter((n) => !held.has(n));
        if (unknown.length)
          throw ApplicationFailure.create({
            message: `${opts.kind} ${name()} holds no machine ${unknown.slice(0, 5).join(', ')}${unknown.length > 5 ? ` (and ${unknown.length - 5} more)` : ''} that is not being deleted already: name machines it holds (capt get machines), or leave them out`,
            type: 'InvalidSpec',
            nonRetryable: true,
          });
      },
    },
  );
  function refuseWhileDeleting(what: string): void {
    if (state.deleting)
      throw ApplicationFailure.create({
        message: `${opts.kind} ${name()} is being deleted; there is nothing to ${what}`,
        type: 'InvalidSpec',
        nonRetryable: true,
      });
  }

  const mustContinueAsNew = () => ownerContinueAsNewDue() || startedThisRun >= startsPerRun;
  /**
   * A batch of reports that reaches a run during its last task is refused BusyWorkflow ("workflow is closing") and
   * sent again to the next run. While a machine has a report to make, the run ends in the task that takes the next
   * batch (the worker process that sent it sends that owner nothing more until the task completes:
   * machine-reports.ts), or after a short wait.
   */
  const handOverBetweenBatches = async () => {
    if (!state.machines.some(reportComing)) return;
    const seen = reportBatches;
    await condition(() => reportBatches !== seen, handOverWaitMs);
  };
  const checkpoint = async () => {
    if (!mustContinueAsNew()) return;
    if (patched(handOverPatch)) await handOverBetweenBatches();
    await condition(allHandlersFinished);
    await opts.continueAsNew();
  };
  const deleteMachines = async (names: string[]) => {
    const leaving = new Set(names);
    for (const m of state.machines) if (leaving.has(m.name)) m.deleting = true;
    await deletePoolMachines(facts.namespace, names, !!state.deleting?.clusterDeleting);
  };
  const toReplace = () => {
    if (!state.replace?.length) return new Set<string>();
    const held = heldNames();
    state.replace = state.replace.filter((n) => held.has(n));
    return new Set(state.replace);
  };
  return {
    toReplace,
    refresh,
    observe,
    adopt: async (version) => {
      if (!state.adoption || state.adoption.complete) return;
      setStep('Adopting', `rebuilt (${state.adoption.cause}): adopting the machines the lost workflow left`);
      await adoptMachines({ kind: opts.kind, facts, name: name(), version, state, onPage: changed, checkpoint });
      setStep('Adopting', `rebuilt (${state.adoption.cause}): adopted ${state.adoption.adopted} machines`);
    },
    setStep,
    changes: () => changes,
    changed,
    checkpoint,
    whileClusterPaused: async () => {
      if (!state.clusterPaused) return false;
      setStep(
        'ClusterPaused',
        'the cluster is paused: no machine is created, deleted or remediated until it is unpaused',
      );
      await condition(() => !state.clusterPaused || !!state.deleting || mustContinueAsNew());
      return true;
    },
    startBudget: () => Math.max(0, startsPerRun - startedThisRun),
    newNames: (base, count) =>
      newMachineNames(
        base,
        count,
        state.machines.map((m) => m.name),
      ),
    startMachines: async (machines) => {
      const now = new Date().toISOString();
      startedThisRun += machines.length;
      // Only a control plane places machines by domain; a MachineDeployment's is its template's, so its records
      // (a thousand of them) go without.
      const placed = (spec: MachineSpec) => (opts.kind === 'KubeadmControlPlane' ? spec.failureDomain : undefined);
      state.machines.push(
        ...machines.map((m) => newRecord(m.spec.name, m.templateHash, m.spec.version, now, placed(m.spec))),
      );
      const refused = new Set(await startPoolMachines(machines));
      if (refused.size) state.machines = state.machines.filter((m) => !refused.has(m.name));
    },
    deleteMachines,
    deleteAllAndFinish: async (what) => {
      setStep('Deleting', `deleting every ${what}`);
      for (;;) {
        // Machines deleted in an earlier run were asked already; asking again is harmless but costs a signal each.
        await deleteMachines(state.machines.filter((m) => !m.deleting).map((m) => m.name));
        await condition(
          () => state.machines.length === 0 || state.machines.some((m) => !m.deleting) || mustContinueAsNew(),
        );
        if (state.machines.length === 0) break;
        await checkpoint();
      }
      // The last report is awaited so the cluster hears it before this run closes.
      Object.assign(state, { step: 'deleted', stepReason: 'Deleted' });
      const final = opts.status();
      await sendSummary(final);
      return final;
    },
  };
}

/** Owners that continue as new between two batches of reports rather than while one arrives. */
const handOverPatch = 'owner-hand-over-between-report-batches';

/** How long a run that must continue as new waits for the next batch of reports at most. */
export const handOverWaitMs = 2_000;

/** What the UI shows of a rebuilt owner: that it was lost, and what it adopted. */
function adoptionDetails(adoption: OwnerAdoption | undefined): string {
  if (!adoption) return '';
  const what = adoption.complete
    ? `adopted ${adoption.adopted} machines`
    : `adopting machines (${adoption.adopted} so far)`;
  return `\n\nRebuilt at ${adoption.at} (${adoption.cause}): ${what}`;
}
