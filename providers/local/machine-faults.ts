import { readdir } from 'node:fs/promises';
import { readJson, writeJsonAtomic } from '../../src/util/files';
import { holdProcess, isHeld, releaseProcess, runningPid, stopProcess } from '../../src/util/processes';
import { controlPlaneComponents, isControlPlaneComponent, type ControlPlaneComponent } from './control-plane-components';
import { machineRecordPath, machineRunDir, type LocalMachineRecord } from './layout';

/**
 * Failures on purpose, for tests and demos of health checks and remediation:
 * - `kubelet`: the machine's simulated kubelet stops heartbeating; the node controller marks its Node's
 *   conditions Unknown (NotReady) after its grace period;
 * - a control-plane component: it stops and stays stopped (its restart loop is held), as when its static
 *   pod manifest is moved away;
 * - `all`: the machine stops whole, as powered off: every component held, the kubelet silent, the machine
 *   out of the endpoint. A bootstrap still running then is stopped for good and fails, as it would.
 * Repairing undoes them; breaking what is broken and repairing what is whole succeed.
 */
export type MachineFault = 'kubelet' | ControlPlaneComponent | 'all';

/** A fault that cannot be applied as asked: `NotFound` (no such machine here) or `Refused` (the machine cannot take it). */
export class MachineFaultError extends Error {
  constructor(message: string, readonly reason: 'NotFound' | 'Refused') {
    super(message);
    this.name = 'MachineFaultError';
  }
}

async function machineRecord(mdir: string, name: string): Promise<LocalMachineRecord> {
  const record = await readJson<LocalMachineRecord>(machineRecordPath(mdir));
  if (!record) throw new MachineFaultError(`machine ${name} has no local machine on this host (it was never created here, or it is deleted)`, 'NotFound');
  return record;
}

/** Read again just before writing: the provider changes the record too (detaching a control-plane machine). */
async function updateRecord(mdir: string, name: string, change: (r: LocalMachineRecord) => LocalMachineRecord): Promise<void> {
  await writeJsonAtomic(machineRecordPath(mdir), change(await machineRecord(mdir, name)));
}

/** The processes recorded in a machine's run folder, by name. */
async function recordedProcesses(mdir: string): Promise<string[]> {
  return (await readdir(machineRunDir(mdir)).catch(() => [] as string[])).filter((f) => f.endsWith('.pid')).map((f) => f.slice(0, -4));
}

export async function injectFault(mdir: string, name: string, fault: MachineFault): Promise<void> {
  const record = await machineRecord(mdir, name);
  const runDir = machineRunDir(mdir);
  if (fault === 'kubelet') {
    await updateRecord(mdir, name, (r) => ({ ...r, kubeletStopped: true }));
  } else if (fault === 'all') {
    // Powered off first: the endpoint and the kubelets drop the machine before its processes go.
    await updateRecord(mdir, name, (r) => ({ ...r, power: 'off' }));
    await Promise.all((await recordedProcesses(mdir)).map(async (recorded) => {
      if (!isControlPlaneComponent(recorded)) return stopProcess(runDir, recorded);
      if (await runningPid(runDir, recorded)) await holdProcess(runDir, recorded);
    }));
  } else {
    if (record.role !== 'control-plane') {
      throw new MachineFaultError(`machine ${name} is a worker and runs no ${fault}; break its kubelet or the whole machine instead`, 'Refused');
    }
    if (record.power === 'off') return;
    if (!(await runningPid(runDir, fault))) {
      throw new MachineFaultError(`${fault} does not run on machine ${name} yet: its bootstrap starts it; try again once the machine is Running`, 'Refused');
    }
    await holdProcess(runDir, fault);
  }
}

/** Undoes `fault`; `all` undoes every fault of the machine. A machine stopped whole is only repaired whole. */
export async function clearFault(mdir: string, name: string, fault: MachineFault): Promise<void> {
  const record = await machineRecord(mdir, name);
  const runDir = machineRunDir(mdir);
  if (fault === 'all') {
    await Promise.all(controlPlaneComponents.map((c) => releaseProcess(runDir, c)));
    await updateRecord(mdir, name, ({ kubeletStopped: _, ...r }) => ({ ...r, power: 'on' }));
  } else if (record.power === 'off') {
    throw new MachineFaultError(`machine ${name} is stopped whole, so its ${fault} cannot start alone; repair the whole machine`, 'Refused');
  } else if (fault === 'kubelet') {
    await updateRecord(mdir, name, ({ kubeletStopped: _, ...r }) => r);
  } else {
    await releaseProcess(runDir, fault);
  }
}

/** What is broken on the machine now: `all` alone when it is stopped whole. */
export async function currentFaults(mdir: string, name: string): Promise<MachineFault[]> {
  const record = await machineRecord(mdir, name);
  if (record.power === 'off') return ['all'];
  const held = await Promise.all(controlPlaneComponents.map(async (c) => ((await isHeld(machineRunDir(mdir), c)) ? [c] : [])));
  return [...(record.kubeletStopped ? ['kubelet' as const] : []), ...held.flat()];
}
