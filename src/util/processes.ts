import { access, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { writeFileAtomic } from './files';
import { launch } from './process-launcher';

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
  /** False: `env` is the whole environment, nothing of this process's (a sandboxed machine gets none of the worker's). */
  inheritEnv?: boolean;
  /** Run again this many seconds after each exit, as the kubelet restarts a static pod; stopping ends the loop too. */
  restartAfterSeconds?: number;
}

interface PidRecord {
  pid: number;
  startTime: string;
  command: string;
  /** Run under the restart loop, which honours a hold (`holdProcess`). */
  restartLoop?: boolean;
}

const pidPath = (stateDir: string, name: string) => join(stateDir, `${name}.pid`);

/** While this file exists, a restart loop leaves its command stopped (as a static pod whose manifest was moved away). */
const holdPath = (stateDir: string, name: string) => join(stateDir, `${name}.held`);

/** /proc/<pid>/stat from the state field on: the command name before it is parenthesised and may hold spaces. */
async function statFields(pid: number): Promise<string[] | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  return stat ? stat.slice(stat.lastIndexOf(')') + 2).split(' ') : undefined;
}

/** The start time (field 22) of a running process; undefined when no process has that pid, or it is a zombie. */
export async function liveStartTime(pid: number): Promise<string | undefined> {
  const fields = await statFields(pid);
  return fields && fields[0] !== 'Z' ? fields[19] : undefined;
}

async function readPidRecord(stateDir: string, name: string): Promise<PidRecord | undefined> {
  try {
    return JSON.parse(await readFile(pidPath(stateDir, name), 'utf8')) as PidRecord;
  } catch {
    return undefined;
  }
}

/** The pid of the process recorded under `name`, if it still runs. */
export async function runningPid(stateDir: string, name: string): Promise<number | undefined> {
  const record = await readPidRecord(stateDir, name);
  if (!record) return undefined;
  return (await liveStartTime(record.pid)) === record.startTime ? record.pid : undefined;
}

/** Get-or-start: returns the running process's pid, starting it only when it is not running. */
export async function startDetached(spec: ProcessSpec): Promise<number> {
  const existing = await runningPid(spec.stateDir, spec.name);
  if (existing) return existing;
  await mkdir(spec.stateDir, { recursive: true });
  // A record of a process gone would keep the launcher from recording the new one.
  await rm(pidPath(spec.stateDir, spec.name), { force: true });
  const restartLoop = spec.restartAfterSeconds !== undefined;
  const [command, args] = restartLoop
    ? [
        '/bin/sh',
        [
          '-c',
          restartLoopScript(spec.restartAfterSeconds!),
          spec.name,
          holdPath(spec.stateDir, spec.name),
          spec.command,
          ...spec.args,
        ],
      ]
    : [spec.command, spec.args];
  const started = await launch({
    command,
    args,
    cwd: spec.cwd ?? spec.stateDir,
    env: spec.inheritEnv === false ? { ...spec.env } : { ...process.env, ...spec.env },
    log: join(spec.stateDir, `${spec.name}.log`),
    pidFile: pidPath(spec.stateDir, spec.name),
  });
  try {
    const startTime = await liveStartTime(started.pid);
    if (!startTime) {
      // A short script (a machine's cloud-init) may be done before it could be looked at: that is success.
      const code = await started.exited;
      if (code === 0) return started.pid;
      throw new Error(
        `${spec.command} exited at once with status ${code}; see ${join(spec.stateDir, `${spec.name}.log`)}`,
      );
    }
    const record: PidRecord = {
      pid: started.pid,
      startTime,
      command: spec.command,
      ...(restartLoop ? { restartLoop } : {}),
    };
    // Over the launcher's record, with what only the caller knows.
    await writeFileAtomic(pidPath(spec.stateDir, spec.name), JSON.stringify(record));
    return started.pid;
  } finally {
    started.done();
  }
}

/**
 * `sh -c script name holdfile cmd args...`: the loop is the group leader, so stopProcess reaches it and the
 * command alike. While the hold file exists it waits instead of starting the command.
 */
const restartLoopScript = (seconds: number) =>
  [
    'hold=$1; shift',
    'while :; do',
    '  if [ -e "$hold" ]; then echo "$0 held: stays stopped until released"; while [ -e "$hold" ]; do sleep 1; done; echo "$0 released"; fi',
    `  "$@"; echo "$0 exited with status $?; restarting in ${seconds}s"; sleep ${seconds}`,
    'done',
  ].join('\n');

/**
 * Stops the command of a process started with a restart loop and keeps it stopped until `releaseProcess`,
 * as stopping a static pod does: the loop stays (so the group, its pid record and `stopProcess` are as
 * before) and only waits. Holding a held process succeeds. Throws when nothing runs under `name`, or it
 * runs without a restart loop (it could not be started again).
 */
export async function holdProcess(stateDir: string, name: string, graceMs = 5000): Promise<void> {
  const record = await readPidRecord(stateDir, name);
  const pid = await runningPid(stateDir, name);
  if (!record || !pid) throw new Error(`${name} is not running (no live process recorded in ${stateDir})`);
  if (!record.restartLoop)
    throw new Error(
      `${name} runs without a restart loop, so it could not be started again; only a process started with restartAfterSeconds can be held`,
    );
  await writeFile(holdPath(stateDir, name), '');
  await stopCommand(pid, graceMs);
  // The loop may have passed its hold check just before the file appeared and be starting the command now: look again until nothing is left to stop.
  do await sleep(300);
  while (await stopCommand(pid, graceMs));
}

/** Lets a held process's loop start its command again (within a second); releasing what is not held succeeds. */
export async function releaseProcess(stateDir: string, name: string): Promise<void> {
  await rm(holdPath(stateDir, name), { force: true });
}

export async function isHeld(stateDir: string, name: string): Promise<boolean> {
  return access(holdPath(stateDir, name)).then(
    () => true,
    () => false,
  );
}

/** Stops the restart loop's command (every member of its group but the loop and its `sleep`s); true when there was one to stop. */
async function stopCommand(leader: number, graceMs: number): Promise<boolean> {
  const command = (await groupMembers(leader)).filter((m) => m.pid !== leader && m.name !== 'sleep');
  if (command.length === 0) return false;
  for (const m of command) signalProcess(m.pid, 'SIGTERM');
  const alive = async () =>
    (await Promise.all(command.map(async (m) => (await liveStartTime(m.pid)) === m.startTime))).some(Boolean);
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline && (await alive())) await sleep(50);
  for (const m of command) if ((await liveStartTime(m.pid)) === m.startTime) signalProcess(m.pid, 'SIGKILL');
  while (await alive()) await sleep(20);
  return true;
}

/**
 * Stops the process group recorded under `name`: SIGTERM, then SIGKILL after `graceMs`, and returns once
 * every process the group had is gone (a restart loop's leader goes first; the component it ran may take
 * longer, and must not outlive the call, holding its address). Already gone is success. Processes are
 * followed by pid and start time, never by group id alone: pids wrap quickly here (pid_max 32768), and
 * a reused group id must never be signalled.
 */
export async function stopProcess(stateDir: string, name: string, graceMs = 5000): Promise<void> {
  const pid = await runningPid(stateDir, name);
  if (pid) {
    const members = await groupMembers(pid);
    signalGroup(pid, 'SIGTERM');
    const alive = async () =>
      (await Promise.all(members.map(async (m) => (await liveStartTime(m.pid)) === m.startTime))).some(Boolean);
    const deadline = Date.now() + graceMs;
    while (Date.now() < deadline && (await alive())) await sleep(50);
    // A restart loop may have forked a new component just before the signal: look again until none is left.
    for (
      let late = members;
      late.length;
      late = (await groupMembers(pid)).filter(
        (m) => !members.some((k) => k.pid === m.pid && k.startTime === m.startTime),
      )
    ) {
      if (late !== members) members.push(...late);
      for (const m of late) if ((await liveStartTime(m.pid)) === m.startTime) signalProcess(m.pid, 'SIGKILL');
      while (await alive()) await sleep(20);
    }
  }
  await rm(pidPath(stateDir, name), { force: true });
}

interface GroupMember {
  pid: number;
  startTime: string;
  /** The kernel's command name (comm). */
  name: string;
}

/** The processes of a group, each with its start time; zombies excluded (pid 1 here may never reap an orphan). */
async function groupMembers(pgid: number): Promise<GroupMember[]> {
  const members: GroupMember[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    // state, ppid, pgrp, ... starttime
    const fields = await statFields(Number(entry));
    if (fields && Number(fields[2]) === pgid && fields[0] !== 'Z')
      members.push({ pid: Number(entry), startTime: fields[19]!, name: await commandName(Number(entry)) });
  }
  return members;
}

async function commandName(pid: number): Promise<string> {
  return (await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '')).trim();
}

function signalProcess(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  // Detached children lead their own process group, so this also reaches anything they started.
  signalProcess(-pid, signal);
}

/** The last `lines` lines of a process's log, for error messages. */
export async function logTail(stateDir: string, name: string, lines = 20): Promise<string> {
  const text = await readFile(join(stateDir, `${name}.log`), 'utf8').catch(() => '');
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}
