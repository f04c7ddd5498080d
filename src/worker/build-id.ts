import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** capt's version, from its package.json. */
export function captVersion(): string {
  return (JSON.parse(readFileSync(join(__dirname, '../../../package.json'), 'utf8')) as { version: string }).version;
}

/**
 * The build id of a workflow bundle: capt's version and a short hash of the bundle's code. Workflow code
 * that changes is a new build; the same code on every host and in every process is the same build.
 */
export function buildIdOf(bundleCode: string): string {
  return `${captVersion()}-${createHash('sha256').update(bundleCode).digest('hex').slice(0, 12)}`;
}
