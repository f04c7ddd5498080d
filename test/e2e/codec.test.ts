import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { connect } from 'node:net';
import { defaultPayloadConverter } from '@temporalio/common';
import { AesGcmCodec } from '../../src/codec/aes-gcm-codec';
import { codecKeysEnv, loadCodecKeys } from '../../src/codec/codec-keys';
import { codecTokenFile, readCodecToken } from '../../src/codec/codec-token';
import { coreTaskQueue } from '../../src/contract/task-queues';
import { clusterDir } from '../../providers/local/layout';
import { until } from '../fixtures/until';
import { toolPaths } from '../../src/tools';
import { freePort } from '../../src/util/free-port';
import { runCapt } from '../fixtures/capt-cli';
import { listening } from '../fixtures/leaks';
import { MachineHarness } from '../fixtures/machine-harness';
import { spawnWorkerProcess, type WorkerProcess } from '../fixtures/worker-process';

const run = promisify(execFile);
const root = join(__dirname, '../../..');
const cli = join(__dirname, '../../src/cli/main.js');
// A real dev server and worker process, which encrypt with the key the fixtures put in CAPT_CODEC_KEYS.
const h = new MachineHarness();
/** Appears only in the cluster's model: the workflow's input and what its queries return. */
const probe = 'sealed-probe.example';
const ui = 'http://127.0.0.1:8233';
let codecServer: WorkerProcess;
let codecPort: number;

const capt = (...args: string[]) => runCapt({ TEMPORAL_ADDRESS: h.env.address, CAPT_HOME: h.home }, ...args);

/**
 * `temporal workflow show` as an operator runs it, the detailed text and the JSON, without the search
 * attributes: Temporal indexes those, so they are plaintext by design (and hold no secret).
 */
async function show(...flags: string[]): Promise<string> {
  const temporal = (...format: string[]) =>
    run(
      toolPaths().temporal,
      [
        'workflow',
        'show',
        '--address',
        h.env.address,
        '-w',
        'cluster/default/sealed',
        '--color',
        'never',
        ...format,
        ...flags,
      ],
      { maxBuffer: 64 << 20 },
    ).then((r) => r.stdout);
  const [text, json] = await Promise.all([temporal('--detailed'), temporal('-o', 'json')]);
  const textLines = text.split('\n').filter((line) => !/^\s*(searchAttributes\.)?indexedFields\./.test(line));
  return [
    ...textLines,
    JSON.stringify(JSON.parse(json), (key, value: unknown) => (key === 'searchAttributes' ? undefined : value)),
  ].join('\n');
}

/** A node process with this environment but no payload key at all. */
async function withoutKey(script: string, ...args: string[]): Promise<{ code: number; stderr: string }> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    CAPT_HOME: join(h.home, 'keyless'),
    TEMPORAL_ADDRESS: h.env.address,
  };
  delete env[codecKeysEnv];
  return run(process.execPath, [script, ...args], { env }).then(
    () => ({ code: 0, stderr: '' }),
    (err: { code: number; stderr: string }) => err,
  );
}

before(async () => {
  await h.start();
  codecPort = await freePort();
  codecServer = await spawnWorkerProcess(cli, ['codec-server', '--port', String(codecPort), '--cors-origin', ui]);
});
after(async () => {
  await codecServer?.stop();
  await h.stop();
});

test("Temporal keeps only ciphertext of a cluster capt applied; `temporal workflow show` decodes it through `capt codec-server`, and the Web UI's preflight passes", async () => {
  const applied = await capt(
    'apply',
    '-f',
    join(root, 'examples/quickstart.yaml'),
    '--var',
    'CLUSTER_NAME=sealed',
    '--var',
    `SERVICE_DOMAIN=${probe}`,
    '--var',
    'WORKER_MACHINE_COUNT=0',
  );
  assert.equal(applied.code, 0, applied.stderr);
  const described = await capt('describe', 'cluster', 'sealed');
  assert.equal(described.code, 0, `the CLI with the key reads the cluster: ${described.stderr}`);

  const stored = await show();
  assert.ok(!stored.includes(probe), 'without the codec, the model is not readable');
  assert.ok(
    stored.includes('binary/encrypted') || stored.includes(Buffer.from('binary/encrypted').toString('base64')),
    'the payloads are marked encrypted',
  );
  const plainEncoding = ['json/plain', Buffer.from('json/plain').toString('base64')]
    .map((needle) => stored.indexOf(needle))
    .find((at) => at >= 0);
  assert.equal(
    plainEncoding,
    undefined,
    `not even their encoding shows; found in: ${stored.slice(Math.max(0, (plainEncoding ?? 0) - 400), (plainEncoding ?? 0) + 200)}`,
  );
  const codecEndpoint = `http://127.0.0.1:${codecPort}`;
  const tokenless = await show('--codec-endpoint', codecEndpoint).catch((err: Error) => err.message);
  assert.ok(!tokenless.includes(probe), 'without the token the codec server decodes nothing');
  const decoded = await show('--codec-endpoint', codecEndpoint, '--codec-auth', `Bearer ${readCodecToken()}`);
  assert.ok(decoded.includes(probe), 'through the codec server, with its token, the operator reads the model');
  assert.equal((await stat(codecTokenFile())).mode & 0o777, 0o600, "the token file is its owner's alone");

  // No request ends the process: a malformed request line, then a flood with oversized bodies among it.
  const line = await new Promise<string>((resolve, reject) => {
    const socket = connect(codecPort, '127.0.0.1', () =>
      socket.end('POST http://a:99999/decode HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'),
    );
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
  });
  assert.match(line, /^HTTP\/1.1 4\d\d/);
  const flood = await Promise.all(
    Array.from({ length: 200 }, (_, i) =>
      fetch(`${codecEndpoint}/decode`, {
        method: 'POST',
        headers: { authorization: `Bearer ${i % 2 ? 'wrong' : readCodecToken()}` },
        body: i % 10 === 0 ? 'x'.repeat(5 << 20) : '{"payloads":[]}',
      }).then(
        (r) => r.status,
        () => 0,
      ),
    ),
  );
  assert.ok(
    flood.every((status) => [200, 401, 413, 503, 0].includes(status)),
    `every request got an answer or was cut: ${[...new Set(flood)].join(', ')}`,
  );
  assert.ok(flood.includes(200) && flood.includes(401), 'the token decided');
  const after = await fetch(`${codecEndpoint}/decode`, {
    method: 'POST',
    headers: { authorization: `Bearer ${readCodecToken()}` },
    body: '{"payloads":[]}',
  });
  assert.equal(after.status, 200, 'still answering after the flood');

  const preflight = await fetch(`http://127.0.0.1:${codecPort}/decode`, {
    method: 'OPTIONS',
    headers: {
      origin: ui,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'content-type,x-namespace',
    },
  });
  assert.equal(preflight.status, 204);
  assert.equal(preflight.headers.get('access-control-allow-origin'), ui);
  assert.equal(preflight.headers.get('access-control-allow-credentials'), 'true');
  assert.match(preflight.headers.get('access-control-allow-headers') ?? '', /content-type.*x-namespace/);

  const deleted = await capt('delete', 'cluster', 'sealed', '--wait', '--timeout', '5m');
  assert.equal(deleted.code, 0, deleted.stderr);
});

test('without a key, the CLI and a worker refuse with how to make one; the codec server stops and frees its port', async () => {
  const how = /no payload encryption key: .*capt codec key new/;
  const listed = await withoutKey(cli, 'get', 'clusters');
  assert.equal(listed.code, 1);
  assert.match(listed.stderr, how);
  const worker = await withoutKey(join(__dirname, '../../src/worker/worker-main.js'));
  assert.equal(worker.code, 1);
  assert.match(worker.stderr, how);
  await codecServer.stop();
  assert.equal(await codecServer.exited, '0', 'SIGTERM stops it cleanly');
  assert.equal(await listening('127.0.0.1', codecPort), false);
});

test('a workflow started with a plaintext input by the temporal CLI is refused, runs nothing, and the refusal is itself encrypted in history', async () => {
  const workflowId = 'cluster/default/forged';
  await run(toolPaths().temporal, [
    'workflow',
    'start',
    '--address',
    h.env.address,
    '--task-queue',
    coreTaskQueue,
    '--type',
    'clusterWorkflow',
    '--workflow-id',
    workflowId,
    '--input',
    JSON.stringify({ cluster: { namespace: 'default', name: 'forged' } }),
  ]);
  const handle = h.env.client.workflow.getHandle(workflowId);
  const events = await until("the worker's refusal in history", async () => {
    const history = (await handle.fetchHistory()).events ?? [];
    return history.some((e) => e.workflowTaskFailedEventAttributes) ? history : undefined;
  });
  const failure = events.find((e) => e.workflowTaskFailedEventAttributes)!.workflowTaskFailedEventAttributes!.failure!;
  assert.equal(failure.message, 'Encoded failure', 'history holds no plaintext message');
  const [attributes] = await new AesGcmCodec(loadCodecKeys()).decode([failure.encodedAttributes!]);
  assert.match(
    JSON.stringify(defaultPayloadConverter.fromPayload(attributes!)),
    /refused a payload that is not encrypted/,
  );
  assert.deepEqual(
    events.filter(
      (e) => e.activityTaskScheduledEventAttributes || e.startChildWorkflowExecutionInitiatedEventAttributes,
    ),
    [],
    'nothing was scheduled',
  );
  assert.equal(existsSync(clusterDir('default', 'forged')), false, 'the provider was never asked for anything');
  // The test's own check of every history would count the refused tasks: the forged workflow goes.
  await handle.terminate('forged by the test');
  await run(toolPaths().temporal, ['workflow', 'delete', '--address', h.env.address, '-w', workflowId]);
  await until('the forged workflow gone', () =>
    handle.describe().then(
      () => undefined,
      () => true,
    ),
  );
});
