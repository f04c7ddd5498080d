import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { processesMentioning } from '../fixtures/leaks';
import { startTemporal } from '../fixtures/temporal';
import { temporalPerfEnv } from '../fixtures/temporal-perf';

const run = promisify(execFile);

test(`${temporalPerfEnv}: the dev server is sampled while it runs, and perf ends with it`, async () => {
  const dir = await mkdtemp(join(tmpdir(), 'capt-temporal-perf-'));
  try {
    process.env[temporalPerfEnv] = dir;
    const env = await startTemporal().finally(() => delete process.env[temporalPerfEnv]);
    // Some work for the server to be sampled at: a few hundred visibility queries.
    for (let i = 0; i < 300; i++) await env.client.workflow.count('WorkflowType = "none"');
    await env.teardown();

    const files = await readdir(dir);
    assert.equal(files.length, 1, `one perf file: ${files.join(', ')}`);
    const file = join(dir, files[0]!);
    assert.ok((await stat(file)).size > 0, 'the perf file holds samples');
    assert.deepEqual(await processesMentioning([file]), [], 'no perf left after the teardown');
    const { stdout } = await run('perf', ['report', '-i', file, '--stdio', '--sort', 'comm,dso', '-g', 'none'], {
      maxBuffer: 16 * 1024 * 1024,
    });
    assert.match(stdout, /temporal/, 'the samples are the dev server binary');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
