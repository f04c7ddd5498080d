import { readdir, readFile } from 'node:fs/promises';
import { processesMentioning } from '../test/fixtures/leaks';

/** What names each part of a local stack on its command line (the dev server's `start-dev` among them). */
export const stackParts = {
  temporal: 'start-dev',
  kubeApiserver: 'kube-apiserver ',
  etcd: '/etcd ',
  kubeControllerManager: 'kube-controller-manager ',
  kubeScheduler: 'kube-scheduler ',
  clusterAgent: 'cluster-agent-main',
  processLauncher: 'process-launcher-main',
} as const;

/** The pids of each part, found in one pass over /proc; pids in `except` (another stack's) are left out. */
export async function processesByPart(except: number[] = []): Promise<Record<keyof typeof stackParts, number[]>> {
  const found = Object.fromEntries(Object.keys(stackParts).map((k) => [k, [] as number[]])) as Record<
    keyof typeof stackParts,
    number[]
  >;
  for (const { pid, cmdline } of await processesMentioning(Object.values(stackParts)))
    for (const [part, needle] of Object.entries(stackParts))
      if (cmdline.includes(needle) && !except.includes(pid)) found[part as keyof typeof stackParts].push(pid);
  return found;
}

/** Resident memory of `pids` together, in MiB (a process gone meanwhile counts 0). */
export async function rssMiB(pids: number[]): Promise<number> {
  let kib = 0;
  for (const pid of pids)
    kib += Number(/VmRSS:\s+(\d+)/.exec(await readFile(`/proc/${pid}/status`, 'utf8').catch(() => ''))?.[1] ?? 0);
  return Math.round(kib / 1024);
}

/**
 * Proportional memory of `pids` together, in MiB: pages shared between them (PostgreSQL's buffers in every
 * backend) are counted once, split among their sharers, where RSS would count them in each.
 */
export async function pssMiB(pids: number[]): Promise<number> {
  let kib = 0;
  for (const pid of pids)
    kib += Number(/^Pss:\s+(\d+)/m.exec(await readFile(`/proc/${pid}/smaps_rollup`, 'utf8').catch(() => ''))?.[1] ?? 0);
  return Math.round(kib / 1024);
}

/** The fields of /proc/<pid>/stat after the parenthesised command name (which may hold spaces). */
async function statFields(pid: number | string): Promise<string[]> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/**
 * CPU seconds (user + system) of `pids` so far: their own (fields 14-15 of stat), or with `reaped` those of their
 * ended children (16-17), which no running process shows.
 */
export async function cpuSecondsOf(pids: number[], reaped = false): Promise<number> {
  const first = reaped ? 13 : 11;
  let ticks = 0;
  for (const pid of pids) {
    const fields = await statFields(pid);
    ticks += Number(fields[first] ?? 0) + Number(fields[first + 1] ?? 0);
  }
  return ticks / 100;
}

/** `pid` and every live process below it (a server and the backends it forked). */
export async function withDescendants(pid: number): Promise<number[]> {
  const parents = new Map<number, number>();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = await statFields(entry);
    if (fields.length > 1) parents.set(Number(entry), Number(fields[1]));
  }
  const found = [pid];
  for (let i = 0; i < found.length; i++)
    for (const [child, parent] of parents) if (parent === found[i]) found.push(child);
  return found;
}
