import { spawn } from 'node:child_process';
import { readdir, readlink } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';

const marker = 'CAPI_BENCH_NETNS';

/** True in the copy of the bench that runs inside its network namespace. */
export const inNetworkNamespace = () => process.env[marker] !== undefined;

const netnsOf = (pid: number | string) => readlink(`/proc/${pid}/ns/net`).catch(() => undefined);

/** Every process whose network namespace is `ns`, found by reading /proc. */
async function processesIn(ns: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc'))
    if (/^\d+$/.test(entry) && (await netnsOf(entry)) === ns) pids.push(Number(entry));
  return pids;
}

/**
 * Runs this same script again inside a new network namespace that has only `lo` (unshare --net), and
 * returns its exit code. A namespace lives while a process is in it: after the run, anything still in it
 * is a leak, which is killed (so no namespace is left behind) and reported as a failure.
 */
export async function rerunInNetworkNamespace(): Promise<number> {
  const script = 'ip link set lo up && exec "$@"';
  const child = spawn(
    'unshare',
    ['--net', '--', 'sh', '-c', script, 'sh', process.execPath, ...process.execArgv, ...process.argv.slice(1)],
    {
      stdio: 'inherit',
      env: { ...process.env, [marker]: '1' },
    },
  );
  const ours = await netnsOf(process.pid);
  let ns: string | undefined;
  const exited = new Promise<number>((resolve) =>
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))),
  );
  // An interrupt goes to the run inside, which stops what it started; this one waits for it, then sweeps.
  const forward = (signal: NodeJS.Signals) => child.kill(signal);
  process.on('SIGINT', forward);
  process.on('SIGTERM', forward);
  // unshare enters the namespace just after it starts: read the child's namespace once it differs from ours.
  for (let i = 0; i < 100 && child.pid !== undefined && !ns; i++) {
    const seen = await netnsOf(child.pid);
    if (seen && seen !== ours) ns = seen;
    else await sleep(20);
  }
  const code = await exited;
  process.off('SIGINT', forward);
  process.off('SIGTERM', forward);
  if (!ns) return code;
  const left = await processesIn(ns);
  if (left.length === 0) return code;
  console.error(
    `capi bench: ${left.length} process(es) left in the network namespace ${ns} (${left.join(', ')}): killing them`,
  );
  for (const pid of left) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  return code || 1;
}
