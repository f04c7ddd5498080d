import { readFile } from 'node:fs/promises';

/** Processes of the management plane by part (a part may be several processes, as Temporal's dev server is). */
export type Parts = Record<string, number[]>;

/** Per part: CPU seconds (user + system) used so far, and the peak resident set (VmHWM) so far, in MiB. */
export interface Usage {
  cpuSeconds: Record<string, number>;
  peakRssMiB: Record<string, number>;
}

const ticksPerSecond = 100;

async function cpuSecondsOf(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  // After the parenthesised command name: field 14 (utime) and 15 (stime) are the 12th and 13th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11] ?? 0) + Number(fields[12] ?? 0)) / ticksPerSecond;
}

async function peakRssMiBOf(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  return Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

/**
 * Reads /proc once per process: the kernel keeps both counters, so nothing samples in the background and
 * the measurement costs nothing while the system works. VmHWM is each process's own peak; a part's peak
 * is the sum of its processes' peaks, an upper bound when they peak at different times.
 */
export async function readUsage(parts: Parts): Promise<Usage> {
  const usage: Usage = { cpuSeconds: {}, peakRssMiB: {} };
  for (const [part, pids] of Object.entries(parts)) {
    let cpu = 0;
    let rss = 0;
    for (const pid of pids) {
      cpu += await cpuSecondsOf(pid);
      rss += await peakRssMiBOf(pid);
    }
    usage.cpuSeconds[part] = Number(cpu.toFixed(2));
    usage.peakRssMiB[part] = Math.round(rss);
  }
  return usage;
}

/** CPU seconds each part used between two readings, with their total. */
export function cpuBetween(before: Usage, after: Usage): Record<string, number> {
  const parts = Object.fromEntries(
    Object.keys(after.cpuSeconds).map((k) => [
      k,
      Number((after.cpuSeconds[k]! - (before.cpuSeconds[k] ?? 0)).toFixed(2)),
    ]),
  );
  return {
    ...parts,
    total: Number(
      Object.values(parts)
        .reduce((a, b) => a + b, 0)
        .toFixed(2),
    ),
  };
}

/** The parts' peaks at a reading, with their total. */
export function peakRss(usage: Usage): Record<string, number> {
  return { ...usage.peakRssMiB, total: Object.values(usage.peakRssMiB).reduce((a, b) => a + b, 0) };
}
