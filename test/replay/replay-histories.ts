import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { temporal } from '@temporalio/proto';

/** Where the captured histories are kept, one directory per test file that ran them. */
export const historiesDir = join(__dirname, '../../../test/replay/histories');

/** At most this many histories of each workflow type per scenario: the richest (see replay-capture.ts). */
export const historiesPerType = 2;

const History = temporal.api.history.v1.History;
const jsonForm = { longs: String, enums: String, bytes: String };

/**
 * A history as JSON in protobufjs's object form (enums by name, bytes base64), and back. Not the proto3
 * JSON of `temporal workflow show -o json`: the SDK's historyToJSON/historyFromJSON throw "type must be a
 * Type" here, its protojson and @temporalio/proto each loading a protobufjs copy of their own.
 */
export const historyToPlainJson = (history: temporal.api.history.v1.IHistory): object =>
  History.toObject(History.fromObject(history), jsonForm);
export const historyFromPlainJson = (json: object): temporal.api.history.v1.History => History.fromObject(json);

/** One captured run: its history (see historyToPlainJson), decoded and redacted. */
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
  return files.map((path) => ({
    file: relative(dir, path),
    fixture: JSON.parse(gunzipSync(readFileSync(path)).toString('utf8')) as ReplayHistoryFile,
  }));
}
