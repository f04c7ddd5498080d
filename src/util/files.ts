import { mkdir, writeFile } from 'node:fs/promises';
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
