import { readFile } from 'node:fs/promises';

/** The host's CPU time so far, in ticks of /proc/stat's first line: busy (all but idle and iowait) and in all. */
export async function hostCpuTicks(): Promise<{ busy: number; total: number }> {
  const line = (await readFile('/proc/stat', 'utf8')).split('\n')[0]!;
  const ticks = line.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = ticks.reduce((a, b) => a + b, 0);
  return { busy: total - ticks[3]! - ticks[4]!, total };
}

/** The share of the host's cores busy between two readings of `hostCpuTicks` (0 to 1). */
export const busyShare = (before: { busy: number; total: number }, after: { busy: number; total: number }) =>
  Number(((after.busy - before.busy) / Math.max(1, after.total - before.total)).toFixed(3));

/** The memory the kernel could hand out now without swapping (MemAvailable), in MiB. */
export async function memAvailableMiB(): Promise<number> {
  const meminfo = await readFile('/proc/meminfo', 'utf8');
  return Math.round(Number(/^MemAvailable:\s+(\d+)/m.exec(meminfo)?.[1] ?? 0) / 1024);
}
