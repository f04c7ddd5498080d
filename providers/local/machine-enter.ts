import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { runningPid } from '../../src/util/processes';
import { machineHostDir, sandboxProcess } from './layout';
import { machineEnvironment } from './machine-sandbox';

const run = promisify(execFile);

/** The host pid of a machine's PID 1: the one child of its sandbox process, whose pid the host recorded itself. */
async function machineInit(mdir: string): Promise<number | undefined> {
  const pid = await runningPid(machineHostDir(mdir), sandboxProcess);
  if (!pid) return undefined;
  const children = (await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => ''))
    .trim()
    .split(' ')
    .filter(Boolean);
  return children.length === 1 ? Number(children[0]) : undefined;
}

/**
 * Runs one of machine-process-main.js's operations inside a running machine, as its own root in its user, PID
 * and mount namespaces, with the machine's environment: the host acts on the machine's processes only through
 * the machine. Returns the exit code; undefined when the machine runs no process.
 */
export async function inMachine(mdir: string, args: string[]): Promise<number | undefined> {
  const init = await machineInit(mdir);
  if (!init) return undefined;
  const argv = [
    '--target',
    String(init),
    '--user',
    '--pid',
    '--mount',
    '--wd=/',
    '--',
    process.execPath,
    join(__dirname, 'machine-process-main.js'),
    ...args,
  ];
  try {
    await run('nsenter', argv, { env: machineEnvironment, timeout: 60_000 });
    return 0;
  } catch (err) {
    const failure = err as { code?: number | string; stderr?: string };
    if (typeof failure.code === 'number' && failure.code !== 1) return failure.code;
    throw new Error(
      `could not act inside the machine (nsenter ${args.join(' ')}): ${failure.stderr?.trim() || (err as Error).message}`,
      { cause: err },
    );
  }
}
