import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { test } from 'node:test';

test('a process told to stop that does not end by itself ends after its stop grace, exit 0, saying why', async () => {
  // A process held open (as a worker by a task that cannot finish), with the grace capt's worker installs.
  const script = `
    const { endAfterStopGrace } = require(${JSON.stringify(join(__dirname, '../../src/worker/stop-grace.js'))});
    const pino = require(${JSON.stringify(require.resolve('pino'))});
    const logger = pino({}, pino.destination(2));
    endAfterStopGrace(logger, 300);
    setInterval(() => undefined, 1000);
    process.stdout.write('ready\\n');
  `;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  await once(child.stdout, 'data');
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const [code, signal] = (await exited) as [number | null, string | null];
  assert.deepEqual([code, signal], [0, null], stderr);
  assert.match(stderr, /tasks still running 0.3 s after the stop signal are left to Temporal's retries/);
});
