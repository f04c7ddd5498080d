import { readFileSync } from 'node:fs';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { captDataConverter, failureConverterPath } from '../src/codec/data-converter';
import { historyFromPlainJson } from '../test/replay/replay-histories';

/**
 * What a worker pays to replay one workflow's whole history (as it must after a failed task lost its cached
 * copy): `temporal workflow show -w ID -o json > FILE`, then, with the run's payload key in CAPT_CODEC_KEYS,
 * `node dist/bench/owner-replay.bench.js FILE [EVENTS]` replays the first EVENTS events (all by default) on this
 * build's workflows and prints the time. bench/README.md has the figures of a 5,000-worker MachineDeployment.
 */

/** `temporal workflow show -o json` writes times and durations as text; the proto wants them as objects. */
function protoShaped(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(protoShaped);
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, protoShaped(v)]));
  if (typeof value !== 'string') return value;
  if (/^\d{4}-\d\d-\d\dT[\d:.]+Z$/.test(value)) {
    const fraction = /\.(\d+)Z$/.exec(value)?.[1] ?? '';
    return { seconds: Math.floor(Date.parse(value) / 1000), nanos: Number(fraction.padEnd(9, '0') || 0) };
  }
  if (/^\d+(\.\d+)?s$/.test(value)) {
    const seconds = parseFloat(value);
    return { seconds: Math.floor(seconds), nanos: Math.round((seconds % 1) * 1e9) };
  }
  return value;
}

async function main(): Promise<void> {
  const [file, count] = process.argv.slice(2);
  if (!file) throw new Error('usage: owner-replay.bench.js FILE [EVENTS], FILE from `temporal workflow show -o json`');
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const json = JSON.parse(readFileSync(file, 'utf8')) as { events: unknown[] };
  json.events = json.events.slice(0, count ? Number(count) : undefined);
  const history = historyFromPlainJson(protoShaped(json) as object);
  const workflowBundle = await bundleWorkflowCode({
    workflowsPath: require.resolve('../workflows'),
    failureConverterPath,
    logger: { trace() {}, debug() {}, info() {}, warn() {}, error: console.error, log() {} },
  });
  const started = process.hrtime.bigint();
  await Worker.runReplayHistory({ workflowBundle, dataConverter: captDataConverter(), replayName: 'bench' }, history);
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  console.log(
    `replayed ${json.events.length} events in ${ms.toFixed(0)} ms (${(ms / json.events.length).toFixed(2)} ms per event)`,
  );
}

main().catch((err: Error) => {
  console.error(err.message);
  process.exitCode = 1;
});
