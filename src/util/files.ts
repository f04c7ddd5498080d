import { randomBytes } from 'node:crypto';
import { link, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/** Writes each relative path -> content under `base`, creating folders; keys and configs get mode 0600. */
export async function writeTree(base: string, files: Record<string, string>): Promise<void> {
  for (const [path, content] of Object.entries(files)) {
    const target = join(base, path);
    await mkdir(dirname(target), { recursive: true });
    const secret = /\.(key|conf)$/.test(path);
    await writeFile(target, content, { mode: secret ? 0o600 : 0o644 });
  }
}

/** A JSON file's value; undefined when it is missing or unreadable (a record being laid out, or gone). */
export async function readJson<T>(path: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as T;
  } catch {
    return undefined;
  }
}

/**
 * Writes through a temporary file and rename, so a reader never sees half a file. The temporary name is this
 * write's own and created exclusively (never through a symlink or over another writer's file), with its final
 * mode from the start.
 */
export async function writeFileAtomic(path: string, content: string, mode = 0o644): Promise<void> {
  const temporary = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    await writeFile(temporary, content, { mode, flag: 'wx' });
    await rename(temporary, path);
  } catch (err) {
    await rm(temporary, { force: true });
    throw err;
  }
}

/** Writes through a temporary file and rename, so a reader never sees half a record. */
export async function writeJsonAtomic(path: string, value: unknown, mode = 0o644): Promise<void> {
  await writeFileAtomic(path, JSON.stringify(value, null, 2), mode);
}

/**
 * Creates `path` with `content` whole or not at all, and never over an existing file: written to a temporary
 * file of its own and hard-linked into place, which fails if the name exists. False when it existed (and is
 * left as it was). For files that may hold the only copy of a secret (payload keys, the codec token).
 */
export async function createFileOnce(path: string, content: string, mode: number): Promise<boolean> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const temporary = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  await writeFile(temporary, content, { mode, flag: 'wx' });
  try {
    await link(temporary, path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    await rm(temporary, { force: true });
  }
}
