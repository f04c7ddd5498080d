import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { gunzipSync } from 'node:zlib';

/** Where the captured histories are kept, one directory per test file that ran them. */
export const historiesDir = join(__dirname, '../../../test/replay/histories');

/** At most this many histories of each workflow type per scenario: the richest (see replay-capture.ts). */
export const historiesPerType = 2;

/** One captured run: a history in proto JSON (as `temporal workflow show -o json`), decoded and redacted. */
export interface ReplayHistoryFile {
  /** The capt version (package.json) and commit whose workflows wrote it. */
  writtenBy: { capt: string; commit: string; uncommittedChanges: boolean };
  /** The test file whose run it is, e.g. `machine-deployment/machine-deployment-rollout`. */
  scenario: string;
  workflowType: string;
  workflowId: string;
  runId: string;
  capturedAt: string;
  history: object;
}

/** Every fixture file under `dir`, by its path relative to it. */
export function readReplayHistories(dir = historiesDir): { file: string; fixture: ReplayHistoryFile }[] {
  const files: string[] = [];
  (function walk(d: string) {
    for (const entry of readdirSync(d, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      if (entry.isDirectory()) walk(join(d, entry.name));
      else if (entry.name.endsWith('.json.gz')) files.push(join(d, entry.name));
    }
  })(dir);
  return files.map((path) => ({ file: relative(dir, path), fixture: JSON.parse(gunzipSync(readFileSync(path)).toString('utf8')) as ReplayHistoryFile }));
}
