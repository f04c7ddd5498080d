import { closeSync, fstatSync, openSync, readdirSync, readSync, statSync, constants } from 'node:fs';
import { join } from 'node:path';
import type { ManifestSource } from '../api/load-manifests';

/** All manifests of one apply together: a cluster's are a few dozen KiB, and Temporal takes 2 MiB per payload. */
export const maxManifestBytes = 4 << 20;

/** Bad command-line input: exit code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

const fsProblem = (path: string, err: unknown) => {
  const code = (err as NodeJS.ErrnoException).code;
  const why =
    code === 'ENOENT'
      ? 'no such file or directory'
      : code === 'EACCES'
        ? 'permission denied: this user cannot read it'
        : code === 'EISDIR'
          ? 'is a folder'
          : (err as Error).message;
  return new UsageError(`-f ${path}: ${why}`);
};

/** Reads at most `budget.left` bytes from an open descriptor; more is refused before it is held in memory. */
function readBounded(fd: number, what: string, budget: { left: number }): string {
  const chunks: Buffer[] = [];
  for (;;) {
    const chunk = Buffer.alloc(Math.min(64 << 10, budget.left + 1));
    const read = readSync(fd, chunk, 0, chunk.length, null);
    if (read === 0) break;
    budget.left -= read;
    if (budget.left < 0)
      throw new UsageError(
        `${what}: the manifests are over ${maxManifestBytes >> 20} MiB; a cluster's manifests are a few KiB: split them, or apply fewer clusters at once`,
      );
    chunks.push(chunk.subarray(0, read));
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** A regular file, opened without blocking (a FIFO named here is refused, never waited on) and read bounded. */
function readFile(path: string, budget: { left: number }): ManifestSource {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    throw fsProblem(path, err);
  }
  try {
    const stat = fstatSync(fd);
    if (stat.isDirectory())
      throw new UsageError(`-f ${path}: is a folder, and folders are read only as -f FOLDER, not inside another`);
    if (!stat.isFile())
      throw new UsageError(
        `-f ${path}: not a regular file (a device, FIFO or socket); give a manifest file, a folder of them, or - for standard input`,
      );
    if (stat.size > budget.left)
      throw new UsageError(
        `-f ${path}: ${stat.size} bytes, over the ${maxManifestBytes >> 20} MiB all manifests of one apply may take; a cluster's manifests are a few KiB`,
      );
    return { file: path, text: readBounded(fd, `-f ${path}`, budget) };
  } finally {
    closeSync(fd);
  }
}

/** `-f FILE|DIR|-`: a file, every .yaml/.yml file of a folder (sorted), or standard input; bounded in size, never blocking on a FIFO. */
export function readSources(paths: string[]): ManifestSource[] {
  const budget = { left: maxManifestBytes };
  const sources = paths.flatMap((path) => {
    if (path === '-') return [{ file: '-', text: readBounded(0, 'standard input', budget) }];
    let stat;
    try {
      stat = statSync(path);
    } catch (err) {
      throw fsProblem(path, err);
    }
    if (!stat.isDirectory()) return [readFile(path, budget)];
    let entries: string[];
    try {
      entries = readdirSync(path);
    } catch (err) {
      throw fsProblem(path, err);
    }
    const files = entries.filter((f) => /\.ya?ml$/.test(f)).sort();
    if (files.length === 0)
      throw new UsageError(`-f ${path}: the folder holds no .yaml or .yml file, so there is nothing to apply`);
    return files.map((f) => readFile(join(path, f), budget));
  });
  if (sources.every((s) => s.text.trim() === ''))
    throw new UsageError(`-f ${paths.join(' -f ')}: no manifests found (empty), so nothing was applied`);
  return sources;
}
