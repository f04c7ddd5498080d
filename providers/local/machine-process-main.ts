import { readdir, readFile } from 'node:fs/promises';
import { holdProcess, releaseProcess, runningPid } from '../../src/util/processes';
import { controlPlaneComponents, isControlPlaneComponent } from './control-plane-components';
import { stateDirInMachine } from './machine-metadata';

/**
 * Runs inside a machine (entered by machine-faults.ts with nsenter, as the machine's own root): stops or holds
 * its processes by the pid files in its /run/capt, which hold pids of its own PID namespace. The host never
 * reads those files itself: a machine could write any pid there.
 *   power-off          every component held, every other process (a bootstrap still running) killed
 *   hold COMPONENT     that component stopped and kept stopped (exit 3: it does not run)
 *   release COMPONENT  started again; `release all` for every component
 */
/** Every process of the machine but its PID 1 and this one, with its process group. */
async function machineProcesses(): Promise<{ pid: number; group: number }[]> {
  const found = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === 1 || Number(entry) === process.pid) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields.length > 2) found.push({ pid: Number(entry), group: Number(fields[2]) });
  }
  return found;
}

/** Holds every running component; kills the rest, as a machine powered off loses it. */
async function powerOff(): Promise<void> {
  const loops: number[] = [];
  for (const component of controlPlaneComponents) {
    const loop = await runningPid(stateDirInMachine, component);
    if (!loop) continue;
    loops.push(loop);
    await holdProcess(stateDirInMachine, component);
  }
  for (const { pid, group } of await machineProcesses()) {
    if (loops.includes(group)) continue;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
}

async function main([operation, name]: string[]): Promise<number> {
  if (operation === 'power-off') {
    await powerOff();
    return 0;
  }
  if (operation === 'hold' && name && isControlPlaneComponent(name)) {
    if (!(await runningPid(stateDirInMachine, name))) return 3;
    await holdProcess(stateDirInMachine, name);
    return 0;
  }
  if (operation === 'release' && name && (name === 'all' || isControlPlaneComponent(name))) {
    await Promise.all(
      (name === 'all' ? controlPlaneComponents : [name]).map((c) => releaseProcess(stateDirInMachine, c)),
    );
    return 0;
  }
  process.stderr.write(
    `usage: machine-process-main power-off | hold COMPONENT | release COMPONENT|all (components: ${controlPlaneComponents.join(', ')})\n`,
  );
  return 2;
}

main(process.argv.slice(2)).then(
  (code) => (process.exitCode = code),
  (err: Error) => {
    process.stderr.write(`${err.message}\n`);
    process.exitCode = 1;
  },
);
