import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
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
