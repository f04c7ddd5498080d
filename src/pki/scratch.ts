import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Scratch folders hold private keys while openssl signs; each is named for the process that made it, so one
// left by a process killed mid-signing (SIGKILL runs no finally) is found and removed by the next to start.
const prefix = 'capt-pki-';
const owner = (name: string) => Number(new RegExp(`^${prefix}(\\d+)-`).exec(name)?.[1] ?? Number.NaN);

/** Runs `work` in a private temporary folder (0700), removed when it returns or throws. */
export async function withScratch<T>(work: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), `${prefix}${process.pid}-`));
  try {
    return await work(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists under another user; only ESRCH means no such process.
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
};

/**
 * Removes the scratch folders of processes that no longer run (a reused pid keeps its folder until the next
 * sweep after it exits); returns how many went. Worker processes call it as they start.
 */
export async function removeOrphanScratch(dir = tmpdir()): Promise<number> {
  const orphans = (await readdir(dir).catch(() => [] as string[])).filter((name) => {
    const pid = owner(name);
    return Number.isInteger(pid) && pid > 0 && !alive(pid);
  });
  await Promise.all(orphans.map((name) => rm(join(dir, name), { recursive: true, force: true })));
  return orphans.length;
}
