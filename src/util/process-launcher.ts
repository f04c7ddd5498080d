import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

/**
 * Spawns processes through a small helper process. A fork copies the parent's page tables: from a worker
 * holding a thousand machines' state (~1 GB) each spawn took ~37 ms of its main thread, from the helper
 * about 1 ms.
 */
export interface LaunchRequest {
  id: number;
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string | undefined>;
  /** Appended to by the process's stdout and stderr. */
  log: string;
  /** Where the launcher records the process's pid and start time as soon as it is started (see process-launcher-main). */
  pidFile?: string;
}

export type LaunchReply =
  { id: number; pid: number } | { id: number; error: string } | { id: number; exitCode: number | null };

interface Pending {
  started: (pid: number) => void;
  failed: (err: Error) => void;
  exited: (code: number | null) => void;
}

let helper: ChildProcess | undefined;
let nextId = 0;
const pending = new Map<number, Pending>();

/** While nothing is pending the helper must not keep its parent (a CLI, say) alive. */
function holdParent(hold: boolean): void {
  if (!helper) return;
  if (hold) {
    helper.ref();
    helper.channel?.ref();
  } else {
    helper.unref();
    helper.channel?.unref();
  }
}

function launcher(): ChildProcess {
  if (helper?.connected) return helper;
  // Its parent's pid on its command line says, in ps, whom a launcher serves.
  const child = fork(join(__dirname, 'process-launcher-main.js'), [String(process.pid)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    execArgv: [],
  });
  child.on('message', (message: LaunchReply) => {
    const waiter = pending.get(message.id);
    if (!waiter) return;
    if ('pid' in message) waiter.started(message.pid);
    else if ('error' in message) waiter.failed(new Error(message.error));
    else waiter.exited(message.exitCode);
  });
  // A helper that died fails what it had not started; the next launch forks a new one.
  child.on('exit', () => {
    for (const waiter of pending.values()) waiter.failed(new Error('the process launcher exited'));
    pending.clear();
    if (helper === child) helper = undefined;
  });
  helper = child;
  return child;
}

/**
 * Starts `command` detached. Resolves with its pid once it runs; `exited` settles with its exit status
 * if it ends while the caller still listens (until `done()`).
 */
export function launch(
  spec: Omit<LaunchRequest, 'id'>,
): Promise<{ pid: number; exited: Promise<number | null>; done: () => void }> {
  const id = nextId++;
  const child = launcher();
  return new Promise((resolve, reject) => {
    let settleExit!: (code: number | null) => void;
    const exited = new Promise<number | null>((r) => (settleExit = r));
    const done = () => {
      pending.delete(id);
      if (pending.size === 0) holdParent(false);
    };
    pending.set(id, {
      started: (pid) => resolve({ pid, exited, done }),
      failed: (err) => {
        done();
        settleExit(null);
        reject(err);
      },
      exited: (code) => settleExit(code),
    });
    holdParent(true);
    child.send({ ...spec, id } satisfies LaunchRequest);
  });
}
