import { readJson, writeJsonAtomic } from '../../src/util/files';
import { isHeld } from '../../src/util/processes';
import { controlPlaneComponents, type ControlPlaneComponent } from './control-plane-components';
import { machineRecordPath, machineRunDir, type LocalMachineRecord } from './layout';
import { inMachine } from './machine-enter';

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
  constructor(
    message: string,
    readonly reason: 'NotFound' | 'Refused',
  ) {
    super(message);
    this.name = 'MachineFaultError';
  }
}

async function machineRecord(mdir: string, name: string): Promise<LocalMachineRecord> {
  const record = await readJson<LocalMachineRecord>(machineRecordPath(mdir));
  if (!record)
    throw new MachineFaultError(
      `machine ${name} has no local machine on this host (it was never created here, or it is deleted)`,
      'NotFound',
    );
  return record;
}

/** Read again just before writing: the provider changes the record too (detaching a control-plane machine). */
async function updateRecord(
  mdir: string,
  name: string,
  change: (r: LocalMachineRecord) => LocalMachineRecord,
): Promise<void> {
  await writeJsonAtomic(machineRecordPath(mdir), change(await machineRecord(mdir, name)));
}

export async function injectFault(mdir: string, name: string, fault: MachineFault): Promise<void> {
  const record = await machineRecord(mdir, name);
  if (fault === 'kubelet') {
    await updateRecord(mdir, name, (r) => ({ ...r, kubeletStopped: true }));
  } else if (fault === 'all') {
    // Powered off first: the endpoint and the kubelets drop the machine before its processes go.
    await updateRecord(mdir, name, (r) => ({ ...r, power: 'off' }));
    await inMachine(mdir, ['power-off']);
  } else {
    if (record.role !== 'control-plane') {
      throw new MachineFaultError(
        `machine ${name} is a worker and runs no ${fault}; break its kubelet or the whole machine instead`,
        'Refused',
      );
    }
    if (record.power === 'off') return;
    if ((await inMachine(mdir, ['hold', fault])) !== 0) {
      throw new MachineFaultError(
        `${fault} does not run on machine ${name} yet: its bootstrap starts it; try again once the machine is Running`,
        'Refused',
      );
    }
  }
}

/** Undoes `fault`; `all` undoes every fault of the machine. A machine stopped whole is only repaired whole. */
export async function clearFault(mdir: string, name: string, fault: MachineFault): Promise<void> {
  const record = await machineRecord(mdir, name);
  if (fault === 'all') {
    await inMachine(mdir, ['release', 'all']);
    await updateRecord(mdir, name, ({ kubeletStopped: _, ...r }) => ({ ...r, power: 'on' }));
  } else if (record.power === 'off') {
    throw new MachineFaultError(
      `machine ${name} is stopped whole, so its ${fault} cannot start alone; repair the whole machine`,
      'Refused',
    );
  } else if (fault === 'kubelet') {
    await updateRecord(mdir, name, ({ kubeletStopped: _, ...r }) => r);
  } else {
    await inMachine(mdir, ['release', fault]);
  }
}

/** What is broken on the machine now: `all` alone when it is stopped whole. */
export async function currentFaults(mdir: string, name: string): Promise<MachineFault[]> {
  const record = await machineRecord(mdir, name);
  if (record.power === 'off') return ['all'];
  const held = await Promise.all(
    controlPlaneComponents.map(async (c) => ((await isHeld(machineRunDir(mdir), c)) ? [c] : [])),
  );
  return [...(record.kubeletStopped ? ['kubelet' as const] : []), ...held.flat()];
}
