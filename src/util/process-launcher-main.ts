import { spawn } from 'node:child_process';
import { closeSync, constants, openSync, readFileSync, writeFileSync } from 'node:fs';
import type { LaunchReply, LaunchRequest } from './process-launcher';

/**
 * The launcher process (see process-launcher.ts): spawns what it is asked to, detached, its output appended
 * to the given log, and reports the pid, then the exit status. It ends with its parent's IPC channel.
 */
const reply = (message: LaunchReply) => process.send?.(message);

/**
 * The started process's pid and start time, in `pidFile`, the moment it exists: before its pid is sent (the
 * parent's exit ends this process at once). A worker killed between the launch and its own write of the record
 * then leaves a process its retry finds, not one it starts again beside it. One already gone needs no record.
 */
function recordStarted(pidFile: string, pid: number): void {
  const stat = readFileSync(`/proc/${pid}/stat`, { encoding: 'utf8', flag: 'r' });
  const startTime = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  writeFileSync(pidFile, JSON.stringify({ pid, startTime }), { flag: 'wx', mode: 0o644 });
}

process.on('message', (request: LaunchRequest) => {
  let log: number | undefined;
  try {
    // Never through a symlink: whoever may write the log's folder must not point the log at another file.
    log = openSync(
      request.log,
      constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW,
      0o600,
    );
    const child = spawn(request.command, request.args, {
      cwd: request.cwd,
      env: request.env,
      detached: true,
      stdio: ['ignore', log, log],
    });
    if (child.pid !== undefined && request.pidFile) {
      try {
        recordStarted(request.pidFile, child.pid);
      } catch {
        // Gone already (no /proc entry), or recorded by the caller: nothing to keep.
      }
    }
    child.once('spawn', () => reply({ id: request.id, pid: child.pid! }));
    child.once('error', (err) => reply({ id: request.id, error: err.message }));
    child.once('exit', (code) => reply({ id: request.id, exitCode: code }));
  } catch (err) {
    reply({ id: request.id, error: (err as Error).message });
  } finally {
    if (log !== undefined) closeSync(log);
  }
});
process.on('disconnect', () => process.exit(0));
