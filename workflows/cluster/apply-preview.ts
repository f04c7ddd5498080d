import type { ClusterModel, ControlPlaneModel, MachineDeploymentModel } from '../../src/api/model';
import type { MachineRecord } from '../../src/contract/owner';
import {
  controlPlaneMachineHash,
  dueForRenewal,
  outdatedControlPlaneMachine,
  templateOf,
} from '../control-plane/control-plane-revisions';
import { controlPlaneInPlace } from '../control-plane/control-plane-in-place';
import { MachinePhase } from '../../src/contract/machine';
import { machineSetHash } from '../machine-deployment/machine-sets';
import { workerInPlace } from '../machine-deployment/in-place-sets';
import type { InPlaceCapability } from '../../src/contract/in-place';
import { byTemplate, planMachines, planRollout } from '../machine-deployment/rollout-plan';
import { restartedAtAfter } from '../shared/rollout-after';
import type { ClusterDiff, OwnerChange } from './cluster-diff';
import { resolveIntOrPercent } from '../../src/api/int-or-percent';
import { oldestVersion, upgradePlan } from '../../src/contract/upgrade-plan';

/** What `capt apply --dry-run` reads of a running owner: its status query's records and its current revision. */
export interface RunningOwner {
  /** The version its spec asks for now. */
  version: string;
  replicas: number;
  paused: boolean;
  machines: MachineRecord[];
  /** The current revision's restart time (a restart or rolloutAfter made it): new revisions keep it. */
  restartedAt?: string;
  /** Control plane: when each machine's apiserver certificate expires. */
  certificatesExpireAt?: Record<string, string>;
  /** What its provider updates in place, as its status says. */
  inPlace?: InPlaceCapability;
}

export interface RunningOwners {
  controlPlane?: RunningOwner;
  /** Not started yet (the control plane still initialising): absent. */
  machineDeployments: Record<string, RunningOwner | undefined>;
}

/** What applying one owner's change would do to its machines. */
export interface OwnerPreview {
  /** Machines a rollout would replace: those not on the template the change makes current. */
  replaced: string[];
  /** Machines a rollout would update in place instead (within the same bounds), with why the rest are replaced. */
  updatedInPlace?: string[];
  /** Why the replaced ones are not updated in place, when the change is one the provider could otherwise make. */
  replacedWhy?: string;
  /** When they would go, if not right away (paused, OnDelete, held for the control plane). */
  replacedWhen?: string;
  added: number;
  /** What a scale-down would remove: the machines' names when the pick is fixed now, else how many. */
  removed: string[] | number;
}

/** One step of a ClusterClass cluster's upgrade plan, as the dry run prints it before anything moves. */
export interface UpgradeStep {
  owner: 'control plane' | 'workers';
  from: string;
  to: string;
  /** The control plane's endpoint keeps answering through the step; for workers, whether they all keep running. */
  available: boolean;
  /** Why, or how the step goes. */
  note: string;
}

export interface ClusterPreview {
  /** A ClusterClass cluster's version change: each step of the plan; absent otherwise. */
  upgradePlan?: UpgradeStep[];
  controlPlane: OwnerPreview;
  machineDeployments: Record<string, OwnerPreview>;
  /** MachineDeployments the manifest no longer has: deleted with all their machines. */
  removed: Record<string, OwnerPreview>;
}

const names = (machines: { name: string }[]) => machines.map((m) => m.name);

/** Machines a scale would add (positive) or remove: only a sent scale or a new owner changes the count. */
const replicaChange = (replicas: number, change: OwnerChange, running: RunningOwner | undefined) =>
  change.scale || change.outcome === 'created' ? replicas - (running?.replicas ?? 0) : 0;

/**
 * The control plane: outdated machines by its own rule, those that would take the change in place named apart; a
 * scale-down picks each machine when it goes (health decides), so only a count.
 */
export function controlPlanePreview(
  before: ControlPlaneModel | undefined,
  next: ControlPlaneModel,
  change: OwnerChange,
  running: RunningOwner | undefined,
  nowMs: number,
): OwnerPreview {
  const machines = running?.machines ?? [];
  const restartedAt = restartedAtAfter(next.rolloutAfter, running?.restartedAt, machines, nowMs);
  const hash = controlPlaneMachineHash(next, restartedAt);
  const expiry = running?.certificatesExpireAt ?? {};
  const outdated = outdatedControlPlaneMachine(hash, expiry, next.certificatesExpiryDays, nowMs);
  const verdict =
    before && running
      ? controlPlaneInPlace(
          running.inPlace,
          next,
          { template: templateOf(before), restartedAt: running.restartedAt },
          { template: templateOf(next), restartedAt },
        )
      : undefined;
  const beforeHash = before && controlPlaneMachineHash(before, running?.restartedAt);
  // As the workflow: running machines of the template running now, with nothing only a new machine renews.
  const renewedOnlyByReplacement = dueForRenewal(expiry, next.certificatesExpiryDays, nowMs);
  const stale = machines.filter((m) => !m.deleting && outdated(m));
  const inPlace = verdict?.inPlace
    ? stale.filter(
        (m) =>
          m.templateHash === beforeHash &&
          m.phase === MachinePhase.Running &&
          !m.updating &&
          !m.marked &&
          !renewedOnlyByReplacement(m),
      )
    : [];
  const replaced = change.spec ? names(stale.filter((m) => !inPlace.includes(m))) : [];
  const updatedInPlace = change.spec ? names(inPlace) : [];
  const delta = replicaChange(next.replicas, change, running);
  return {
    replaced,
    ...(updatedInPlace.length ? { updatedInPlace } : {}),
    ...(replaced.length && verdict && !verdict.inPlace && running?.inPlace ? { replacedWhy: verdict.why } : {}),
    ...(running?.paused && (replaced.length || updatedInPlace.length)
      ? { replacedWhen: 'after `capt rollout resume`' }
      : {}),
    added: Math.max(0, delta),
    removed: Math.max(0, -delta),
  };
}

/**
 * A MachineDeployment: machines off the MachineSet the change makes current are replaced. A scale-down
 * of a settled deployment removes what the plan's first step removes (capt's Random order is by name, so
 * the pick is fixed); during a rollout the plan decides step by step, so only a count.
 */
export function machineDeploymentPreview(
  before: MachineDeploymentModel | undefined,
  next: MachineDeploymentModel,
  change: OwnerChange,
  running: RunningOwner | undefined,
  nowMs: number,
): OwnerPreview {
  const machines = planMachines(running?.machines ?? [], next.minReadySeconds, nowMs, next.machineMaxAgeSeconds);
  const restartedAt = restartedAtAfter(next.rolloutAfter, running?.restartedAt, running?.machines ?? [], nowMs);
  const currentSet = machineSetHash(next.template, restartedAt);
  const { current, old } = byTemplate(machines, currentSet);
  // Machines of the template running now move to the new one in place when the provider can make that change.
  const verdict =
    before && running
      ? workerInPlace(
          running.inPlace,
          next,
          { template: before.template, restartedAt: running.restartedAt },
          { template: next.template, restartedAt },
        )
      : undefined;
  const beforeSet = before && machineSetHash(before.template, running?.restartedAt);
  const inPlace = verdict?.inPlace
    ? old.filter((m) => m.set === beforeSet && m.running && !m.expired && !m.marked)
    : [];
  const replaced = change.spec ? names(old.filter((m) => !inPlace.includes(m))) : [];
  const updatedInPlace = change.spec ? names(inPlace) : [];
  // As the workflow: the manifest's paused wins only when it changed; otherwise `rollout pause/resume` stands.
  const paused = before && next.paused !== before.paused ? next.paused : (running?.paused ?? next.paused);
  const newVersion = !!before && before.template.version !== next.template.version;
  const replacedWhen = paused
    ? 'after `capt rollout resume`'
    : next.strategy.type === 'OnDelete'
      ? 'as each is deleted (OnDelete)'
      : newVersion
        ? `once the control plane runs ${next.template.version}`
        : undefined;
  const delta = replicaChange(next.replicas, change, running);
  const settled = old.length === 0 && current.length === machines.length && machines.length === running?.replicas;
  const removed =
    delta < 0 && settled && !change.spec
      ? planRollout({
          replicas: next.replicas,
          strategy: next.strategy,
          paused: paused ? { surplus: 0 } : undefined,
          currentSet,
          setsNewestFirst: [currentSet],
          machines,
        }).remove
      : Math.max(0, -delta);
  return {
    replaced,
    ...(updatedInPlace.length ? { updatedInPlace } : {}),
    ...(replaced.length && verdict && !verdict.inPlace && running?.inPlace ? { replacedWhy: verdict.why } : {}),
    ...(replacedWhen && (replaced.length || updatedInPlace.length) ? { replacedWhen } : {}),
    added: Math.max(0, delta),
    removed,
  };
}

/**
 * A ClusterClass cluster's upgrade as steps: the control plane through Cluster API's plan one minor at a time, then
 * the workers in topology order. The endpoint stays available through a control-plane step only with 3 or more
 * machines and maxSurge 1 (a new machine joins before an old one leaves, and etcd keeps its quorum).
 */
export function upgradeSteps(next: ClusterModel, controlPlaneVersion: string, workersVersion?: string): UpgradeStep[] {
  const plan = upgradePlan(
    next.topology?.kubernetesVersions,
    next.controlPlane.version,
    controlPlaneVersion,
    workersVersion,
  );
  if ('refused' in plan) return [];
  const { replicas, maxSurge } = next.controlPlane;
  const joinFirst = resolveIntOrPercent(maxSurge, replicas, true) >= 1;
  const cpAvailable = replicas >= 3 && joinFirst;
  const cpNote = cpAvailable
    ? `${replicas} machines replaced one at a time, each new one joining first: the endpoint stays available`
    : replicas < 3
      ? `${replicas} control-plane machine${replicas === 1 ? '' : 's'}: the endpoint may not answer while ${replicas === 1 ? 'it is' : 'one is'} replaced (3 or more with maxSurge 1 keep it available)`
      : 'maxSurge 0: a machine leaves before its replacement joins, so the endpoint may not answer (maxSurge 1 keeps it available)';
  const steps: UpgradeStep[] = [];
  let from = controlPlaneVersion;
  for (const to of plan.controlPlane) {
    steps.push({ owner: 'control plane', from, to, available: cpAvailable, note: cpNote });
    from = to;
  }
  const order = next.topology?.machineDeployments.map((md) => md.topologyName).join(', ');
  const unavailable = next.machineDeployments.filter(
    (md) =>
      md.strategy.type !== 'RollingUpdate' || resolveIntOrPercent(md.strategy.maxUnavailable, md.replicas, false) > 0,
  );
  for (const to of plan.workers) {
    steps.push({
      owner: 'workers',
      from: workersVersion!,
      to,
      available: unavailable.length === 0,
      note: `MachineDeployments ${order} in topology order, ${next.topology?.upgradeConcurrency ?? 1} at a time${unavailable.length ? `; ${unavailable.map((md) => md.name).join(', ')} may take machines down before their replacements run (maxUnavailable above 0, or not RollingUpdate)` : ', each with maxUnavailable 0'}`,
    });
    workersVersion = to;
  }
  return steps;
}

/** What applying `next` over `previous` (diffed as `diff`) would do to each owner's machines, given what runs now. */
export function previewApply(
  previous: ClusterModel | undefined,
  next: ClusterModel,
  diff: ClusterDiff,
  running: RunningOwners,
  nowMs: number,
): ClusterPreview {
  const before = (name: string) => previous?.machineDeployments.find((m) => m.name === name);
  const runningVersion = running.controlPlane?.version ?? previous?.controlPlane.version;
  const workersVersion = oldestVersion(
    Object.values(running.machineDeployments).flatMap((md) => (md ? [md.version] : [])),
  );
  const upgrading = !!next.topology && !!runningVersion && runningVersion !== next.controlPlane.version;
  return {
    ...(upgrading ? { upgradePlan: upgradeSteps(next, runningVersion, workersVersion) } : {}),
    controlPlane: controlPlanePreview(
      previous?.controlPlane,
      next.controlPlane,
      diff.controlPlane,
      running.controlPlane,
      nowMs,
    ),
    machineDeployments: Object.fromEntries(
      diff.machineDeployments.map((change) => [
        change.name,
        machineDeploymentPreview(
          before(change.name),
          next.machineDeployments.find((m) => m.name === change.name)!,
          change,
          running.machineDeployments[change.name],
          nowMs,
        ),
      ]),
    ),
    removed: Object.fromEntries(
      diff.removed.map((name) => [
        name,
        {
          replaced: [],
          added: 0,
          removed: names((running.machineDeployments[name]?.machines ?? []).filter((m) => !m.deleting)),
        },
      ]),
    ),
  };
}
