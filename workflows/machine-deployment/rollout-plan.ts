import type { MachineDeploymentModel } from '../../src/api/model';
import { resolveIntOrPercent } from '../../src/api/int-or-percent';
import { MachinePhase } from '../../src/contract/machine';
import type { MachineRecord } from '../../src/contract/owner';
import { availability } from '../shared/machine-pool';
import { repaveDueMs } from '../../src/contract/machine-max-age';
import { someNames } from '../shared/some-names';

/** What the plan needs of each machine. */
export interface PlanMachine {
  name: string;
  /** The MachineSet hash the machine was created from. */
  set: string;
  createdAt: string;
  deleting: boolean;
  running: boolean;
  /** Running for minReadySeconds. */
  available: boolean;
  /** Carries cluster.x-k8s.io/delete-machine: goes first. */
  marked: boolean;
  /** Older than the deployment's machine max age, or asked to be replaced: replaced as if its template were old. */
  expired?: boolean;
  /** Taking the current template in place: a surplus waits for it rather than cost an available machine. */
  updating?: boolean;
}

export interface PlanInput {
  replicas: number;
  strategy: MachineDeploymentModel['strategy'];
  /** Paused, with the machines beyond replicas (a rollout's surge) there were when it paused: they stay. */
  paused?: { surplus: number };
  currentSet: string;
  /** Set hashes, newest revision first: where a paused deployment adds machines. */
  setsNewestFirst: string[];
  machines: PlanMachine[];
  /** Older sets whose machines the provider can move to the current set in place (see in-place-sets.ts). */
  inPlaceSets?: string[];
}

export interface RolloutPlan {
  create?: { set: string; count: number };
  remove: string[];
  /** Old machines to update in place to the current set: unavailable until they report it, as a replacement is. */
  update?: string[];
  /** Every machine on the current template, available, none old or leaving. */
  complete: boolean;
  /** When nothing can be done now: why, for status and the UI. */
  waiting?: string;
}

/**
 * The machines not being deleted, on the current set's template or to be replaced (an older template, or
 * past the machine max age).
 */
export function byTemplate<M extends Pick<PlanMachine, 'set' | 'deleting' | 'expired'>>(
  machines: M[],
  currentSet: string,
): { current: M[]; old: M[] } {
  const live = machines.filter((m) => !m.deleting);
  const replaced = (m: M) => m.set !== currentSet || !!m.expired;
  return { current: live.filter((m) => !replaced(m)), old: live.filter(replaced) };
}

/**
 * An owner's compact records as the plan reads them, at `nowMs` (for minReadySeconds and the max age). Machines
 * past their max age, or that an operator asked to replace, are due for replacement whatever their set.
 */
export const planMachines = (
  records: MachineRecord[],
  minReadySeconds: number,
  nowMs: number,
  maxAgeSeconds?: number,
  replace?: ReadonlySet<string>,
): PlanMachine[] => {
  const isAvailable = availability(minReadySeconds, nowMs);
  return records.map((m) => ({
    name: m.name,
    set: m.templateHash,
    createdAt: m.createdAt,
    deleting: m.deleting,
    running: m.phase === MachinePhase.Running,
    available: isAvailable(m),
    marked: m.marked,
    ...((maxAgeSeconds !== undefined && repaveDueMs(m.createdAt, maxAgeSeconds) <= nowMs) || replace?.has(m.name)
      ? { expired: true }
      : {}),
    ...(m.updating ? { updating: true } : {}),
  }));
};

/**
 * maxSurge and maxUnavailable as counts, never both 0: the spec rules refuse two literal zeros, and
 * percentages that round to 0 and 0 get maxUnavailable 1, as Cluster API resolves them (surge might hit a quota).
 */
export function rolloutBounds(
  strategy: MachineDeploymentModel['strategy'],
  replicas: number,
): { maxSurge: number; maxUnavailable: number } {
  const maxSurge = resolveIntOrPercent(strategy.maxSurge, replicas, true);
  const maxUnavailable = resolveIntOrPercent(strategy.maxUnavailable, replicas, false);
  return { maxSurge, maxUnavailable: maxSurge === 0 && maxUnavailable === 0 ? 1 : maxUnavailable };
}

/** Deletion priority as Cluster API's MachineSet: annotated, then not running, then by the deletion order. */
export function byDeletionPriority(
  machines: PlanMachine[],
  order: MachineDeploymentModel['strategy']['deletionOrder'],
): PlanMachine[] {
  const age = (a: PlanMachine, b: PlanMachine) =>
    a.createdAt.localeCompare(b.createdAt) || a.name.localeCompare(b.name);
  // Machine names end in random characters, so name order is the deterministic stand-in for Random.
  const rest =
    order === 'Oldest'
      ? age
      : order === 'Newest'
        ? (a: PlanMachine, b: PlanMachine) => age(b, a)
        : (a: PlanMachine, b: PlanMachine) => a.name.localeCompare(b.name);
  return [...machines].sort(
    (a, b) => Number(b.marked) - Number(a.marked) || Number(a.running) - Number(b.running) || rest(a, b),
  );
}

/**
 * One reconcile step of a MachineDeployment, as a pure function. Machines being deleted still count
 * against maxSurge (their Nodes still exist) and never as available, so the bounds hold at every moment:
 * all machines <= replicas + maxSurge, available >= replicas - maxUnavailable.
 */
export function planRollout(input: PlanInput): RolloutPlan {
  const { replicas, strategy } = input;
  const { current, old } = byTemplate(input.machines, input.currentSet);
  const live = [...current, ...old];
  const leaving = input.machines.filter((m) => m.deleting);
  const complete =
    old.length === 0 && leaving.length === 0 && current.length === replicas && current.every((m) => m.available);

  if (input.paused || strategy.type === 'OnDelete') {
    // Scaling still applies; templates change only by deletion (OnDelete) or not at all (paused).
    const wanted = replicas + (input.paused?.surplus ?? 0);
    if (live.length < wanted) {
      const set = input.paused
        ? (input.setsNewestFirst.find((h) => live.some((m) => m.set === h)) ?? input.currentSet)
        : input.currentSet;
      return { create: { set, count: wanted - live.length }, remove: [], complete };
    }
    if (live.length > wanted)
      return {
        remove: [
          ...byDeletionPriority(old, strategy.deletionOrder),
          ...byDeletionPriority(current, strategy.deletionOrder),
        ]
          .slice(0, live.length - wanted)
          .map((m) => m.name),
        complete,
      };
    const why = input.paused
      ? 'paused: scaling applies, the rollout waits for resume'
      : old.length
        ? `OnDelete: ${old.length} machine(s) on an older template are replaced as they are deleted`
        : undefined;
    return { remove: [], complete, ...(why && !complete ? { waiting: why } : {}) };
  }

  const { maxSurge, maxUnavailable } = rolloutBounds(strategy, replicas);
  const minAvailable = Math.max(0, replicas - maxUnavailable);
  const inPlaceSets = new Set(input.inPlaceSets ?? []);
  // A machine marked for deletion goes rather than stays; one past its max age is replaced, as repave asks.
  const updatable = (m: PlanMachine) => inPlaceSets.has(m.set) && m.available && !m.expired && !m.marked;
  const remove: PlanMachine[] = [];
  const update: PlanMachine[] = [];
  // The surge of an in-place rollout goes once no machine is updating: removing it earlier would cost availability.
  if (current.length > replicas && !current.some((m) => m.updating))
    remove.push(...byDeletionPriority(current, strategy.deletionOrder).slice(0, current.length - replicas));
  // Old machines that are not available cost no availability when they go.
  remove.push(...old.filter((m) => !m.available));
  const available = live.filter((m) => m.available && !remove.includes(m)).length;
  const budget = available - minAvailable;
  if (budget > 0)
    for (const m of byDeletionPriority(
      old.filter((m) => m.available),
      strategy.deletionOrder,
    ).slice(0, budget))
      (updatable(m) ? update : remove).push(m);
  // Old machines that will take the current template in place need no new machine.
  const staying = old.filter((m) => updatable(m) && !remove.includes(m)).length;
  const room = replicas + maxSurge - input.machines.length;
  let count = Math.max(0, Math.min(room, replicas - current.length - staying));
  // With maxUnavailable 0 nothing may be updated until a machine surges, as Cluster API's in-place rollout does.
  const settled = leaving.length === 0 && current.every((m) => m.available);
  if (staying && budget <= 0 && count === 0 && settled) count = Math.min(1, room);
  const plan: RolloutPlan = {
    remove: remove.map((m) => m.name),
    ...(update.length ? { update: update.map((m) => m.name) } : {}),
    complete,
    ...(count > 0 ? { create: { set: input.currentSet, count } } : {}),
  };
  if (count > 0 || remove.length || update.length || complete) return plan;
  const pending = current.filter((m) => !m.available).map((m) => m.name);
  const reasons = [
    ...(leaving.length ? [`waiting for ${someNames(leaving.map((m) => m.name))} to be deleted`] : []),
    ...(pending.length ? [`waiting for ${someNames(pending)} to become available`] : []),
  ];
  return {
    ...plan,
    waiting: `${reasons.join('; ') || 'waiting'} (maxSurge ${maxSurge}, maxUnavailable ${maxUnavailable})`,
  };
}
