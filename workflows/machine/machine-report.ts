import {
  coarsePhase,
  DeletionGate,
  deleteMachineAnnotation,
  MachinePhase,
  nodeHealthRecord,
  remediateMachineAnnotation,
  skipRemediationAnnotation,
  type MachineReport,
  type MachineStatus,
  type NodeHealth,
} from '../../src/contract/machine';
import type { MachineState } from './machine-model';

/** A blocker longer than this is cut: the owner shows it in one line and carries a thousand of them. */
const blockerLimit = 200;

/**
 * A deletion is held, not merely under way, while it waits on something outside capt: a hook annotation,
 * a drain a budget blocks, volumes still attached. Passing the gates one by one is no news to the owner.
 */
export function deletionHeld(state: MachineState): boolean {
  const d = state.deletion;
  if (!d) return false;
  return (
    d.gate === DeletionGate.PreDrainHooks ||
    d.gate === DeletionGate.PreTerminateHooks ||
    d.gate === DeletionGate.VolumeDetach ||
    (d.gate === DeletionGate.Drain && (d.drain?.blocked.length ?? 0) > 0)
  );
}

/** Why the machine is stuck, if it is: a held deletion's message, or the failure. */
function blocker(status: MachineStatus, held: boolean): string | undefined {
  const why =
    status.phase === MachinePhase.Deleting
      ? held
        ? status.conditions.find((c) => c.type === 'Deleting')?.message
        : undefined
      : status.phase === MachinePhase.Failed
        ? (status.conditions.find((c) => c.status === 'False' && c.message)?.message ?? status.step)
        : undefined;
  return why && why.length > blockerLimit ? `${why.slice(0, blockerLimit - 1)}…` : why || undefined;
}

/**
 * The report an owner receives: what it plans with, nothing more. `held`: see deletionHeld. `inPlace`: the version a
 * machine updated in place runs now, and whether it is updating (never said by a machine that was not).
 */
export function machineReport(
  status: MachineStatus,
  sequence: number,
  held = false,
  node?: NodeHealth,
  inPlace?: InPlaceNews,
): MachineReport {
  const why = blocker(status, held);
  // Health matters once the machine runs; before, the owner judges it by its phase and age.
  const health = status.phase === MachinePhase.Running ? nodeHealthRecord(node) : undefined;
  const phase = coarsePhase(status.phase);
  // The address matters once the machine runs (the control plane's etcd and preflight); earlier it would cost a report.
  const address = phase === MachinePhase.Provisioning ? undefined : status.addresses[0];
  return {
    name: status.name,
    phase,
    marked: status.annotations[deleteMachineAnnotation] !== undefined,
    sequence,
    ...(address ? { address } : {}),
    ...(why ? { blocker: why } : {}),
    ...(health ? { node: health } : {}),
    ...(status.annotations[remediateMachineAnnotation] !== undefined ? { remediate: true } : {}),
    ...(status.annotations[skipRemediationAnnotation] !== undefined ? { skipRemediation: true } : {}),
    ...(inPlace
      ? {
          version: inPlace.version,
          ...(inPlace.updating ? { updating: true as const } : {}),
          ...(inPlace.templateHash ? { templateHash: inPlace.templateHash } : {}),
        }
      : {}),
  };
}

const keyOf = (r: MachineReport) =>
  JSON.stringify([
    r.name,
    r.phase,
    r.marked,
    r.address ?? '',
    r.blocker ?? '',
    r.node ?? null,
    !!r.remediate,
    !!r.skipRemediation,
    // Only machines updated in place say these: every other key is as it was before they existed.
    ...(r.version ? [r.version, !!r.updating] : []),
  ]);

/** Two statuses with the same key need no new report. */
export const reportKey = (status: MachineStatus, held = false, node?: NodeHealth, inPlace?: InPlaceNews) =>
  keyOf(machineReport(status, 0, held, node, inPlace));

interface InPlaceNews {
  version: string;
  updating: boolean;
  templateHash?: string;
}

/** What a machine tells its owner of in-place updates: nothing until it was asked for one. */
export const inPlaceNews = (state: MachineState): InPlaceNews | undefined =>
  state.inPlaceUpdate || state.inPlaceUpdates
    ? {
        version: state.spec.version,
        updating: !!state.inPlaceUpdate,
        ...(state.inPlaceHash ? { templateHash: state.inPlaceHash } : {}),
      }
    : undefined;

/** What a report says besides the machine's status, from its state: machineReport's and reportKey's last arguments. */
export const reportContext = (state: MachineState) => [deletionHeld(state), state.node, inPlaceNews(state)] as const;

/** What an owner assumes of a machine it just started (see newRecord): telling it so would be no news. */
export const startedByOwnerKey = (name: string) =>
  keyOf({ name, phase: MachinePhase.Provisioning, marked: false, sequence: 0 });
