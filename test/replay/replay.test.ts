import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { failureConverterPath } from '../../src/codec/data-converter';
import { historiesDir, historyFromPlainJson, readReplayHistories } from './replay-histories';
import { dummyBootstrapToken, readableText, redactedPem, secretsLeft } from './redact-secrets';

// The histories of real runs (docs/development.md, Changing workflow code), replayed against today's workflows:
// a change that alters the commands a running workflow already issued fails here, before workers carrying it
// reach a cluster.
const fixtures = readReplayHistories();
const workflowTypes = [
  ...readFileSync(join(__dirname, '../../../workflows/index.ts'), 'utf8').matchAll(/export \{ (\w+) \}/g),
].map((m) => m[1]!);

test('the replay fixtures cover every workflow type capt registers', () => {
  const captured = new Set(fixtures.map((f) => f.fixture.workflowType));
  assert.deepEqual(
    workflowTypes.filter((t) => !captured.has(t)),
    [],
    `types without a captured history in ${historiesDir}`,
  );
});

test('the replay fixtures hold no private key, bootstrap token or kubeconfig credential', () => {
  // The scan reads where the secrets were: the cluster's histories hold their dummies, decoded from the payloads.
  const clusters = fixtures
    .filter((f) => f.fixture.workflowType === 'clusterWorkflow')
    .map((f) => readableText(f.fixture).join('\n'));
  assert.ok(
    clusters.some((text) => text.includes(redactedPem) && text.includes(dummyBootstrapToken)),
    'a cluster history carries the redacted keys and token',
  );
  const found = fixtures.flatMap(({ file, fixture }) => secretsLeft(fixture).map((what) => `${file}: ${what}`));
  assert.deepEqual(found, []);
});

test('every captured history replays on the current workflows without a nondeterminism error', async () => {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const workflowBundle = await bundleWorkflowCode({
    workflowsPath: require.resolve('../../workflows'),
    failureConverterPath,
    logger: { trace() {}, debug() {}, info() {}, warn() {}, error: console.error, log() {} },
  });
  const failures: string[] = [];
  let replayed = 0;
  const histories = fixtures.map(({ fixture }) => ({
    workflowId: fixture.workflowId,
    history: historyFromPlainJson(fixture.history),
  }));
  // One history at a time, results in the order given.
  for await (const result of Worker.runReplayHistories({ workflowBundle, replayName: 'capt-replay' }, histories)) {
    const { file, fixture } = fixtures[replayed++]!;
    if (!result.error) continue;
    const by = `capt ${fixture.writtenBy.capt} at ${fixture.writtenBy.commit.slice(0, 12)}`;
    failures.push(
      `${file}: ${fixture.workflowType} ${result.workflowId} (written by ${by}): ${result.error.name}: ${result.error.message}`,
    );
  }
  assert.equal(replayed, fixtures.length, 'every fixture was replayed');
  assert.deepEqual(failures, [], `${failures.length} of ${fixtures.length} histories no longer replay`);
});
