import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { getExternalWorkflowHandle, ParentClosePolicy, startChild, uuid4, WorkflowIdReusePolicy } from '@temporalio/workflow';
import { requestMachineDeletionSignal } from '../../src/contract/machine-messages';
import { MachinePhase, type MachineReport, type MachineSpec } from '../../src/contract/machine';
import type { MachineRecord } from '../../src/contract/owner';
import { machineSearchAttributes } from '../../src/contract/search-attributes';
import { machineWorkflowId } from '../../src/contract/workflow-ids';
import { machineWorkflow } from '../machine/machine-workflow';

/**
 * The machines an owner (control plane, MachineDeployment) holds, as compact records, and the few ways
 * it acts on them. Machines are abandoned children: they outlive their owner's continue-as-new and report
 * back through machineReportSignal.
 */

/** Machines started or signalled in one go: a plan of 1000 goes out in batches this big. */
export const fanOutBatch = 200;

/** Runs `work` on every item concurrently, a batch of fanOutBatch per workflow task. */
export async function inBatches<T>(items: T[], work: (item: T) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < items.length; i += fanOutBatch) await Promise.all(items.slice(i, i + fanOutBatch).map(work));
}

/**
 * Children one run may start before it continues as new. Temporal refuses a run more than 2,000 pending
 * children, and an abandoned child stays pending for the run that started it until it closes.
 */
export const childrenPerRun = 250;

/**
 * Fresh, deterministic machine names, `<base>-<5 chars>` as Cluster API names them, none of them `taken`:
 * 1000 random names of 5 hex characters would collide more often than not.
 */
export function newMachineNames(base: string, count: number, taken: Iterable<string>): string[] {
  const used = new Set(taken);
  const names: string[] = [];
  while (names.length < count) {
    const name = `${base}-${uuid4().replace(/-/g, '').slice(0, 5)}`;
    if (used.has(name)) continue;
    used.add(name);
    names.push(name);
  }
  return names;
}

export const newRecord = (name: string, templateHash: string, version: string, createdAt: string): MachineRecord => ({
  name, templateHash, version, createdAt, phase: MachinePhase.Provisioning, deleting: false, marked: false, sequence: -1,
});

/**
 * Starts machines concurrently, a batch per workflow task. Returns the names that could not start (a
 * machine of that name existed before): the owner drops them and its next plan picks new names.
 */
export async function startPoolMachines(specs: { spec: MachineSpec; summary: string }[]): Promise<string[]> {
  const refused: string[] = [];
  await inBatches(specs, ({ spec, summary }) => startChild(machineWorkflow, {
    workflowId: machineWorkflowId(spec.namespace, spec.name),
    args: [{ spec }],
    parentClosePolicy: ParentClosePolicy.ABANDON,
    workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
    staticSummary: summary,
    typedSearchAttributes: machineSearchAttributes(spec, MachinePhase.Pending),
  }).catch((err: unknown) => {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    refused.push(spec.name);
  }));
  return refused;
}

/** Asks machines to delete themselves, concurrently, a batch per workflow task. */
export async function deletePoolMachines(namespace: string, names: string[], clusterDeleting: boolean): Promise<void> {
  await inBatches(names, (name) =>
    getExternalWorkflowHandle(machineWorkflowId(namespace, name)).signal(requestMachineDeletionSignal, { clusterDeleting }).catch(() => undefined));
}

/** Applies a machine's report (received at `now`) to the records: the newest one wins; Deleted removes it. */
export function recordMachineReport(machines: MachineRecord[], report: MachineReport, now: string): MachineRecord[] {
  if (report.phase === MachinePhase.Deleted) return machines.filter((m) => m.name !== report.name);
  return machines.map((m) => {
    if (m.name !== report.name || m.sequence > report.sequence) return m;
    const running = report.phase === MachinePhase.Running;
    const { blocker: _blocker, address: _address, runningSince: _since, ...rest } = m;
    return {
      ...rest, phase: report.phase, marked: report.marked, sequence: report.sequence, deleting: m.deleting || report.phase === MachinePhase.Deleting,
      ...(report.address ? { address: report.address } : m.address ? { address: m.address } : {}),
      ...(report.blocker ? { blocker: report.blocker } : {}),
      ...(running ? { runningSince: m.runningSince ?? now } : {}),
    };
  });
}

export const isRunning = (m: MachineRecord) => m.phase === MachinePhase.Running && !m.deleting;

/** Running for at least minReadySeconds at `nowMs`. */
export const isAvailable = (m: MachineRecord, minReadySeconds: number, nowMs: number) =>
  isRunning(m) && !!m.runningSince && Date.parse(m.runningSince) + minReadySeconds * 1000 <= nowMs;
