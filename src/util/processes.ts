import { spawn } from 'node:child_process';
import { mkdir, open, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Detached processes that outlive the worker that started them, as a VM outlives its controller.
 * Each is known by a pid file holding its pid and kernel start time, so a recycled pid is never
 * mistaken for it and a restarted worker finds it again.
 */
export interface ProcessSpec {
  /** Unique within `stateDir`; names the pid and log files. */
  name: string;
  command: string;
  args: string[];
  /** Where `<name>.pid` and `<name>.log` live. */
  stateDir: string;
  cwd?: string;
  env?: Record<string, string>;
  /** Run again this many seconds after each exit, as the kubelet restarts a static pod; stopping ends the loop too. */
  restartAfterSeconds?: number;
}

interface PidRecord {
  pid: number;
  startTime: string;
  command: string;
}

async function processStartTime(pid: number): Promise<string | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Field 22 (starttime) follows the parenthesised command name, which may itself contain spaces.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

async function readPidRecord(stateDir: string, name: string): Promise<PidRecord | undefined> {
  try {
    return JSON.parse(await readFile(join(stateDir, `${name}.pid`), 'utf8')) as PidRecord;
  } catch {
    return undefined;
  }
}

/** The pid of the process recorded under `name`, if it still runs. */
export async function runningPid(stateDir: string, name: string): Promise<number | undefined> {
  const record = await readPidRecord(stateDir, name);
  if (!record) return undefined;
  const startTime = await processStartTime(record.pid);
  if (startTime !== record.startTime) return undefined;
  // A zombie still has a /proc entry; it is not running.
  const status = await readFile(`/proc/${record.pid}/status`, 'utf8').catch(() => '');
  return /^State:\s+Z/m.test(status) ? undefined : record.pid;
}

/** Get-or-start: returns the running process's pid, starting it only when it is not running. */
export async function startDetached(spec: ProcessSpec): Promise<number> {
  const existing = await runningPid(spec.stateDir, spec.name);
  if (existing) return existing;
  await mkdir(spec.stateDir, { recursive: true });
  const log = await open(join(spec.stateDir, `${spec.name}.log`), 'a');
  try {
    // `sh -c script name cmd args...`: the loop is the group leader, so stopProcess reaches it and the command alike.
    const [command, args] = spec.restartAfterSeconds === undefined ? [spec.command, spec.args]
      : ['/bin/sh', ['-c', `while :; do "$@"; echo "$0 exited with status $?; restarting in ${spec.restartAfterSeconds}s"; sleep ${spec.restartAfterSeconds}; done`, spec.name, spec.command, ...spec.args]];
    const child = spawn(command, args, {
      cwd: spec.cwd ?? spec.stateDir,
      env: { ...process.env, ...spec.env },
      detached: true,
      stdio: ['ignore', log.fd, log.fd],
    });
    const pid = await new Promise<number>((resolve, reject) => {
      child.once('error', reject);
      child.once('spawn', () => resolve(child.pid as number));
    });
    child.unref();
    const startTime = await processStartTime(pid);
    if (!startTime) throw new Error(`${spec.command} exited at once; see ${join(spec.stateDir, `${spec.name}.log`)}`);
    const record: PidRecord = { pid, startTime, command: spec.command };
    await writeFile(join(spec.stateDir, `${spec.name}.pid`), JSON.stringify(record));
    return pid;
  } finally {
    await log.close();
  }
}

/**
 * Stops the process group recorded under `name`: SIGTERM, then SIGKILL after `graceMs`, and returns once
 * no process of the group is left (a restart loop's leader goes first; the component it ran may take
 * longer, and must not outlive the call, holding its address). Already gone is success.
 */
export async function stopProcess(stateDir: string, name: string, graceMs = 5000): Promise<void> {
  const pid = await runningPid(stateDir, name);
  if (pid) {
    signalGroup(pid, 'SIGTERM');
    const deadline = Date.now() + graceMs;
    while (Date.now() < deadline && (await groupAlive(pid))) await sleep(50);
    if (await groupAlive(pid)) signalGroup(pid, 'SIGKILL');
    while (await groupAlive(pid)) await sleep(20);
  }
  await rm(join(stateDir, `${name}.pid`), { force: true });
}

/** Whether any process of the group runs; zombies do not count (an orphan's may never be reaped here). */
async function groupAlive(pgid: number): Promise<boolean> {
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    // After the parenthesised command: state, ppid, pgrp.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === pgid && state !== 'Z') return true;
  }
  return false;
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    // Detached children lead their own process group, so this also reaches anything they started.
    process.kill(-pid, signal);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}

/** The last `lines` lines of a process's log, for error messages. */
export async function logTail(stateDir: string, name: string, lines = 20): Promise<string> {
  const text = await readFile(join(stateDir, `${name}.log`), 'utf8').catch(() => '');
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}
