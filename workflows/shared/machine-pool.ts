import { getExternalWorkflowHandle, ParentClosePolicy, startChild, uuid4, WorkflowIdReusePolicy } from '@temporalio/workflow';
import { requestMachineDeletionSignal } from '../../src/temporal/machine-messages';
import type { MachineSpec, MachineStatus } from '../machine/machine-model';
import { machineWorkflow } from '../machine/machine-workflow';

/**
 * The machines an owner (control plane, MachineDeployment) holds, as plain state, and the few ways it
 * acts on them. Machines are abandoned children: they outlive their owner's continue-as-new and report
 * back through machineChangedSignal.
 */
export interface PoolMachine {
  name: string;
  createdAt: string;
  /** Which template (MachineSet) the machine came from. */
  templateHash: string;
  status?: MachineStatus;
  /** Set by the owner when it deletes the machine, or when the machine reports it is being deleted. */
  deleting: boolean;
  /** When the owner first saw it Running: it counts as available minReadySeconds later. */
  runningSince?: string;
}

export const machineWorkflowId = (namespace: string, name: string) => `machine/${namespace}/${name}`;

/** A fresh, deterministic machine name: `<base>-<5 chars>` as Cluster API names them. */
export const newMachineName = (base: string) => `${base}-${uuid4().replace(/-/g, '').slice(0, 5)}`;

export async function startPoolMachine(spec: MachineSpec, summary: string): Promise<void> {
  await startChild(machineWorkflow, {
    workflowId: machineWorkflowId(spec.namespace, spec.name),
    args: [{ spec }],
    parentClosePolicy: ParentClosePolicy.ABANDON,
    workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
    staticSummary: summary,
  });
}

export async function deletePoolMachine(namespace: string, name: string, clusterDeleting: boolean): Promise<void> {
  await getExternalWorkflowHandle(machineWorkflowId(namespace, name)).signal(requestMachineDeletionSignal, { clusterDeleting });
}

/** Applies a machine's report (received at `now`) to the pool: its latest status, or its removal once Deleted. */
export function recordMachineStatus(machines: PoolMachine[], status: MachineStatus, now: string): PoolMachine[] {
  if (status.phase === 'Deleted') return machines.filter((m) => m.name !== status.name);
  return machines.map((m) => {
    if (m.name !== status.name || (m.status?.sequence ?? -1) > status.sequence) return m;
    const running = status.phase === 'Running';
    return { ...m, status, deleting: m.deleting || status.phase === 'Deleting', runningSince: running ? (m.runningSince ?? now) : undefined };
  });
}

export const isRunning = (m: PoolMachine) => m.status?.phase === 'Running' && !m.deleting;

/** Running for at least minReadySeconds at `nowMs`. */
export const isAvailable = (m: PoolMachine, minReadySeconds: number, nowMs: number) =>
  isRunning(m) && !!m.runningSince && Date.parse(m.runningSince) + minReadySeconds * 1000 <= nowMs;
