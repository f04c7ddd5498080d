import { condition, setHandler, workflowInfo } from '@temporalio/workflow';
import { msUntilWindowChanges, windowClosed, windowWaitStep, type AskedWindow } from '../shared/maintenance-hold';
import { recordUnknownSignals } from '../shared/unknown-signals';
import type { MachineDeploymentModel } from '../../src/api/model';
import { machineDeploymentSpecSignal } from '../../src/contract/cluster-messages';
import type { MachineSpec, MachineTemplateChange } from '../../src/contract/machine';
import type { ClusterFacts, OwnerStatus } from '../../src/contract/owner';
import { pendingTemplateChange, sendTemplateChange, templateChange } from '../shared/in-place-change';
import { ownerRuntime, type OwnerState } from '../shared/owner-runtime';
import { workerMachineSpec } from '../shared/worker-machine-spec';
import { machineDeploymentMachineLabels } from '../../src/contract/machine-labels';
import { evaluateHealth, withRemediations, type HealthVerdict } from '../shared/machine-health';
import { machinesRemediated } from '../shared/capt-metrics';
import { recordRevision } from '../shared/revisions';
import { msUntilRolloutAfter, rolloutAfterDue } from '../shared/rollout-after';
import { someNames } from '../shared/some-names';
import { machineMaxAgeAnnotation } from '../../src/contract/machine-max-age';
import { msUntilRepave } from '../shared/repave';
import { machineDeploymentStatus } from './machine-deployment-status';
import { machineSetHash, machineSetName, type MachineSet } from './machine-sets';
import { byTemplate, planMachines, planRollout } from './rollout-plan';
import { inPlaceSets } from './in-place-sets';
import { changedKubeletArgs } from '../../src/contract/in-place';
import { updatePoolMachinesInPlace } from '../shared/machine-pool';
import { machineDeploymentReplicasProblems, machineDeploymentSubject } from '../../src/spec-rules/owner-rules';
import { refuseProblems } from '../shared/spec-refusal';
import { rebuiltOwnerState, type OwnerRebuild } from '../shared/owner-adoption';
import { continueAsNewOnTargetBuild, ownerContinueAsNewDue, pinToBuild } from '../shared/build-upgrade';
import { carriedOwnerState, resumedOwnerState, type CarriedOwnerState } from '../shared/packed-records';

export interface MachineDeploymentInput {
  cluster: ClusterFacts;
  spec: MachineDeploymentModel;
  owner: string;
  /** The cluster generation of `spec`. */
  generation?: number;
  /** The cluster was paused when it started this owner. */
  clusterPaused?: boolean;
  /** The cluster rebuilds this owner after its workflow was lost: it adopts the machines it finds first. */
  rebuild?: OwnerRebuild;
  /** Carried across continue-as-new, its records packed. */
  state?: CarriedOwnerState<MachineDeploymentState>;
}

export interface MachineDeploymentState extends OwnerState {
  /** The desired spec; its template is the current MachineSet's. */
  spec: MachineDeploymentModel;
  /** MachineSets, oldest revision first; the last is current. Old ones without machines are the history. */
  machineSets: MachineSet[];
  /** An in-place template change not yet passed to every machine of the current set. */
  inPlace?: MachineTemplateChange;
  /** Machines beyond replicas when the pause began (a rollout's surge): kept until resume. */
  pausedSurplus?: number;
  /** The maintenance window's current or next opening, as last asked (see maintenance-hold.ts). */
  window?: AskedWindow;
}

/**
 * A MachineDeployment (workflow ID `md/<namespace>/<name>`): keeps `replicas` machines of its current
 * template, rolling from older MachineSets to the current one within maxSurge and maxUnavailable (or as
 * machines are deleted, with OnDelete). Each loop pass acts on a plan computed from plain state.
 */
export async function machineDeploymentWorkflow(input: MachineDeploymentInput): Promise<OwnerStatus> {
  const facts = input.cluster;
  const state: MachineDeploymentState = input.state
    ? resumedOwnerState(input.state)
    : {
        spec: input.spec,
        machineSets: [],
        machines: [],
        paused: input.spec.paused,
        step: 'starting',
        observedGeneration: input.generation ?? 1,
        clusterPaused: input.clusterPaused,
        ...(input.rebuild ? rebuiltOwnerState(input.rebuild, new Date().toISOString()) : {}),
      };
  const self = workflowInfo().workflowId;
  const md = state.spec.name;

  const current = () => state.machineSets.at(-1)!;
  /** Makes the spec's template (with `restartedAt`) the current MachineSet: a new revision when it differs. */
  const recordTemplate = (cause: string, restartedAt: string | undefined) => {
    const hash = machineSetHash(state.spec.template, restartedAt);
    const holdsMachines = (set: MachineSet) => state.machines.some((m) => m.templateHash === set.hash);
    state.machineSets = recordRevision<MachineSet, MachineSet['template']>(
      state.machineSets,
      {
        name: machineSetName(md, hash),
        hash,
        version: state.spec.template.version,
        cause,
        at: new Date().toISOString(),
        template: state.spec.template,
        restartedAt,
      },
      state.spec.revisionHistoryLimit,
      holdsMachines,
    );
    // Labels, annotations and timeouts change in place: new machines of the current set get them.
    state.machineSets = state.machineSets.map((set) =>
      set.hash === hash ? { ...set, template: state.spec.template } : set,
    );
  };
  if (!state.machineSets.length) {
    recordTemplate(input.rebuild ? `rebuilt (${input.rebuild.cause})` : 'created', undefined);
    // Revisions are never numbered down: a rebuilt owner goes on from the lost one's.
    state.machineSets[0]!.revision = input.rebuild?.previous?.revision ?? 1;
  }

  const {
    refresh,
    observe,
    setStep,
    deleteAllAndFinish,
    changes,
    changed,
    checkpoint,
    whileClusterPaused,
    startMachines,
    startBudget,
    deleteMachines,
    newNames,
    adopt,
    toReplace,
  } = ownerRuntime({
    kind: 'MachineDeployment',
    facts,
    owner: input.owner,
    state,
    status: () => machineDeploymentStatus(facts, state, Date.now()),
    validateReplicas: (replicas) =>
      refuseProblems(machineDeploymentReplicasProblems(machineDeploymentSubject(facts.namespace, md), replicas)),
    revisions: () => state.machineSets,
    reapply: (target, cause, restartedAt) => {
      state.spec = { ...state.spec, template: (target as MachineSet).template };
      recordTemplate(cause, restartedAt);
    },
    continueAsNew: () =>
      continueAsNewOnTargetBuild<typeof machineDeploymentWorkflow>({ ...input, state: carriedOwnerState(state) }),
  });
  setHandler(machineDeploymentSpecSignal, ({ spec, cause, generation }) => {
    observe(generation);
    const pausedChanged = spec.paused !== state.spec.paused;
    const before = current();
    state.spec = { ...spec, replicas: state.spec.replicas, name: md };
    if (pausedChanged) state.paused = spec.paused;
    recordTemplate(cause, current().restartedAt);
    // Labels, annotations and timeouts reach the current set's machines in place, as Cluster API propagates them.
    if (current().hash === before.hash)
      state.inPlace = pendingTemplateChange(before.template, current().template, state.inPlace);
    changed();
  });
  recordUnknownSignals((state.unknownSignals ??= []), refresh);

  /** Passes the pending in-place change to the current set's machines, a batch per workflow task. */
  async function sendInPlace(change: MachineTemplateChange): Promise<void> {
    const targets = state.machines.filter((m) => !m.deleting && m.templateHash === current().hash).map((m) => m.name);
    setStep('ChangingInPlace', `changing labels, annotations and timeouts of ${targets.length} machines in place`);
    await sendTemplateChange(facts.namespace, targets, change);
    if (state.inPlace === change) state.inPlace = undefined;
  }

  const machineSpec = (name: string, set: MachineSet): MachineSpec =>
    workerMachineSpec(facts, name, set.template, {
      labels: {
        ...machineDeploymentMachineLabels(facts.name, md, set.template.labels),
        'cluster.x-k8s.io/set-name': set.name,
      },
      annotations: {
        ...set.template.annotations,
        'machinedeployment.clusters.x-k8s.io/revision': String(set.revision),
      },
      owner: self,
      batchedReports: true,
      reportsByUpdate: true,
    });

  refresh();
  await adopt(() => current().version);
  while (!state.deleting) {
    await checkpoint();
    if (await whileClusterPaused()) continue;
    if (rolloutAfterDue(state.spec.rolloutAfter, current().restartedAt, state.machines, Date.now())) {
      recordTemplate(`rolloutAfter ${state.spec.rolloutAfter}`, state.spec.rolloutAfter);
      refresh();
    }
    if (state.inPlace) {
      await sendInPlace(state.inPlace);
      continue;
    }
    const now = Date.now();
    const verdict = state.spec.healthCheck && evaluateHealth(state.spec.healthCheck, state.machines, now);
    if (verdict && (await remediate(verdict, now))) continue;
    const set = current();
    const live = state.machines.filter((m) => !m.deleting).length;
    const replace = toReplace();
    const machines = planMachines(
      state.machines,
      state.spec.minReadySeconds,
      now,
      state.spec.machineMaxAgeSeconds,
      replace,
    );
    // Outside its maintenance window a held deployment replaces nothing, as if paused; scaling still applies.
    const window = await windowClosed(
      state,
      state.spec.maintenanceWindow,
      byTemplate(machines, set.hash).old.length,
      now,
    );
    const holding = !!state.paused || !!window;
    if (!holding) state.pausedSurplus = undefined;
    else state.pausedSurplus ??= Math.max(0, live - state.spec.replicas);
    const plan = planRollout({
      replicas: state.spec.replicas,
      strategy: state.spec.strategy,
      paused: holding ? { surplus: state.pausedSurplus! } : undefined,
      currentSet: set.hash,
      setsNewestFirst: [...state.machineSets].reverse().map((s) => s.hash),
      machines,
      inPlaceSets: inPlaceSets(facts.inPlace, state.spec, state.machineSets),
    });
    const due = machines.filter((m) => m.expired && !m.deleting && m.set === set.hash);
    const repave = [
      repaveNote(due.filter((m) => !replace.has(m.name)).length),
      replace.size ? `replacing ${someNames([...replace])} as asked (capt rotate certificates)` : '',
    ]
      .filter(Boolean)
      .join('; ');
    const target = state.machineSets.find((s) => s.hash === plan.create?.set);
    // A run starts a bounded number of children; the rest come after continue-as-new.
    const count = target ? Math.min(plan.create!.count, startBudget()) : 0;
    if (plan.update) await updateInPlace(plan.update, set);
    if (plan.remove.length || count > 0) {
      const names = target ? newNames(target.name, count) : [];
      // The step first: starting a few hundred machines takes a while, and the UI should say so meanwhile.
      setStep(
        names.length ? 'CreatingMachines' : 'DeletingMachines',
        [
          target && names.length ? `creating ${someNames(names)} (revision ${target.revision})` : '',
          plan.remove.length ? `deleting ${someNames(plan.remove)}` : '',
          repave,
        ]
          .filter(Boolean)
          .join('; '),
      );
      await deleteMachines(plan.remove);
      if (target && names.length) {
        await startMachines(
          names.map((name) => ({
            spec: machineSpec(name, target),
            templateHash: target.hash,
            summary: `Machine ${name} of MachineSet ${target.name} (revision ${target.revision}), cluster ${facts.name}`,
          })),
        );
      }
      continue;
    }
    if (plan.update) continue;
    if (window && !plan.complete && !state.paused) setStep('WaitingForMaintenanceWindow', windowWaitStep(window));
    else
      setStep(
        plan.complete ? 'Stable' : state.paused ? 'Paused' : 'RollingOut',
        plan.complete
          ? `${state.spec.replicas} machines running (revision ${set.revision})`
          : `rolling out revision ${set.revision} (${set.name}): ${plan.waiting ?? ''}${repave ? `; ${repave}` : ''}${blockers()}`,
      );
    const seen = changes();
    const wake = nextWakeMs(now, verdict?.nextAtMs);
    const moved = () => !!state.deleting || changes() !== seen || ownerContinueAsNewDue();
    await (wake === undefined ? condition(moved) : condition(moved, wake));
  }
  return deleteAllAndFinish('machine');

  /**
   * The MachineHealthCheck's verdict acted on, as a MachineSet remediates: unhealthy machines are deleted
   * (drain and hooks as usual) and the plan's next pass replaces them. False when nothing was remediated.
   */
  async function remediate(verdict: HealthVerdict, now: number): Promise<boolean> {
    const check = state.spec.healthCheck!;
    if (!verdict.allowed || !verdict.remediable.length) return false;
    state.remediations = withRemediations(state.remediations, verdict.remediable, now);
    machinesRemediated(
      { namespace: facts.namespace, cluster: facts.name, owner: state.spec.name, kind: 'MachineDeployment' },
      verdict.remediable,
    );
    setStep(
      'Remediating',
      `MachineHealthCheck ${check.name}: remediating ${verdict.remediable
        .map((u) => `${u.machine} (${u.message}, since ${u.since})`)
        .slice(0, 3)
        .join(', ')}${verdict.remediable.length > 3 ? ` and ${verdict.remediable.length - 3} more` : ''}`,
    );
    await deleteMachines(verdict.remediable.map((u) => u.machine));
    return true;
  }

  /**
   * Moves running machines of older sets to `set` where they run: their records count them as the set's, not
   * available until they report its version. Those that refuse (gone, no longer running, a build without in-place
   * updates) are deleted, and the plan's next pass replaces them.
   */
  async function updateInPlace(names: string[], set: MachineSet): Promise<void> {
    setStep('UpdatingInPlace', `updating ${someNames(names)} in place to ${set.version} (revision ${set.revision})`);
    const moving = new Set(names);
    const from = new Map<string, string[]>();
    state.machines = state.machines.map((m) => {
      if (!moving.has(m.name)) return m;
      from.set(m.templateHash, [...(from.get(m.templateHash) ?? []), m.name]);
      const { runningSince: _since, ...rest } = m;
      return { ...rest, templateHash: set.hash, version: set.version, updating: true };
    });
    refresh();
    // Each old set's labels and annotations (its set name, revision) give way to the new set's, as in place.
    const refused = (
      await Promise.all(
        [...from].map(([hash, machines]) => {
          const old = state.machineSets.find((s) => s.hash === hash);
          const bootstrap = set.template.bootstrap.config;
          // New kubelet arguments travel with the request (the machine restarts its kubelet with them).
          const newArgs = old && changedKubeletArgs(old.template.bootstrap.config, bootstrap).length;
          return updatePoolMachinesInPlace(facts.namespace, machines, {
            version: set.version,
            templateHash: set.hash,
            metadata: templateChange(
              old ? machineSpec('', old) : { labels: {}, annotations: {} },
              machineSpec('', set),
            ),
            ...(newArgs ? { bootstrapConfig: bootstrap } : {}),
          });
        }),
      )
    ).flat();
    if (refused.length) await deleteMachines(refused);
  }

  /** What the machines a rollout waits on are doing: a drain held by a budget, a failing bootstrap. */
  function blockers(): string {
    const stuck = state.machines.filter((m) => m.blocker).slice(0, 3);
    return stuck.length ? ` [${stuck.map((m) => `${m.name} ${m.phase}: ${m.blocker}`).join('; ')}]` : '';
  }

  /** Machines of the current template replaced for their age: said in the step, so a repave is told from a rollout. */
  function repaveNote(count: number): string {
    return count
      ? `repaving ${count} machine(s) older than ${state.spec.machineMaxAgeSeconds}s (${machineMaxAgeAnnotation})`
      : '';
  }

  /**
   * When to look again without a message: a machine reaching minReadySeconds or its max age, the maintenance
   * window opening or closing, a health timeout (`healthAt`), or rolloutAfter passing.
   */
  function nextWakeMs(now: number, healthAt: number | undefined): number | undefined {
    const live = state.machines.filter((m) => !m.deleting);
    const repave = msUntilRepave(live, state.spec.machineMaxAgeSeconds, now);
    const window = msUntilWindowChanges(state, now);
    const times = [
      ...live.filter((m) => m.runningSince).map((m) => Date.parse(m.runningSince!) + state.spec.minReadySeconds * 1000),
      ...[repave, window].filter((ms) => ms !== undefined).map((ms) => now + ms),
    ].filter((t) => t > now);
    if (healthAt !== undefined) times.push(healthAt);
    const untilRolloutAfter = msUntilRolloutAfter(state.spec.rolloutAfter, now);
    if (untilRolloutAfter !== undefined) times.push(now + untilRolloutAfter);
    return times.length ? Math.max(1000, Math.min(...times) - now + 50) : undefined;
  }
}

pinToBuild(machineDeploymentWorkflow);
