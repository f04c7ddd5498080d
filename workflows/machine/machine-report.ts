import { deleteMachineAnnotation, MachinePhase, type MachineReport, type MachineStatus } from '../../src/contract/machine';

/** A blocker longer than this is cut: the owner shows it in one line and carries a thousand of them. */
const blockerLimit = 200;

/** Phases before Running mean the same to an owner: not there yet. */
const ownerPhase = (phase: MachinePhase): MachinePhase =>
  phase === MachinePhase.Pending || phase === MachinePhase.Provisioned ? MachinePhase.Provisioning : phase;

/** Why the machine is stuck, if it is: the deletion gate's message, or the failure. */
function blocker(status: MachineStatus): string | undefined {
  const why = status.phase === MachinePhase.Deleting
    ? status.conditions.find((c) => c.type === 'Deleting')?.message
    : status.phase === MachinePhase.Failed ? status.conditions.find((c) => c.status === 'False' && c.message)?.message ?? status.step : undefined;
  return why && why.length > blockerLimit ? `${why.slice(0, blockerLimit - 1)}…` : why || undefined;
}

/** The report an owner receives: what it plans with, nothing more. */
export function machineReport(status: MachineStatus, sequence: number): MachineReport {
  const why = blocker(status);
  const phase = ownerPhase(status.phase);
  // The address matters once the machine runs (the control plane's etcd and preflight); earlier it would cost a report.
  const address = phase === MachinePhase.Provisioning ? undefined : status.addresses[0];
  return {
    name: status.name, phase, marked: status.annotations[deleteMachineAnnotation] !== undefined, sequence,
    ...(address ? { address } : {}), ...(why ? { blocker: why } : {}),
  };
}

/** Two statuses with the same key need no new report. */
export const reportKey = (status: MachineStatus) => JSON.stringify({ ...machineReport(status, 0), sequence: undefined });
