import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { ManifestSource } from '../api/load-manifests';

/** `-f FILE|DIR|-`: a file, every .yaml/.yml file of a folder (sorted), or standard input. */
export function readSources(paths: string[]): ManifestSource[] {
  return paths.flatMap((path) => {
    if (path === '-') return [{ file: '-', text: readFileSync(0, 'utf8') }];
    let stat;
    try {
      stat = statSync(path);
    } catch {
      throw new UsageError(`-f ${path}: no such file or directory`);
    }
    if (!stat.isDirectory()) return [{ file: path, text: readFileSync(path, 'utf8') }];
    return readdirSync(path).filter((f) => /\.ya?ml$/.test(f)).sort().map((f) => ({ file: join(path, f), text: readFileSync(join(path, f), 'utf8') }));
  });
}

/** Bad command-line input: exit code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}
