import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { availableKubernetesVersions } from '../../src/tools';
import { freePort } from '../../src/util/free-port';
import { listening, processesMentioning } from '../fixtures/leaks';

const run = promisify(execFile);
const cli = join(__dirname, '../../src/cli/main.js');
let env: Record<string, string>;
let home: string;

async function capt(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [cli, ...args], { env: { ...process.env, ...env } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

before(async () => {
  home = await mkdtemp(join(tmpdir(), 'capt-home-'));
  env = { CAPT_HOME: home, CAPT_DEV_PORT: String(await freePort()), CAPT_DEV_UI_PORT: String(await freePort()) };
});
after(async () => {
  await capt('dev', 'stop');
  await rm(home, { recursive: true, force: true });
});

test('capt dev start|status|stop runs the Temporal dev server with its Web UI and a worker in the background, and stops them', async () => {
  const started = await capt('dev', 'start');
  assert.equal(started.code, 0, started.stderr);
  assert.match(started.stdout, new RegExp(`Web UI:\\s+http://127\\.0\\.0\\.1:${env.CAPT_DEV_UI_PORT}`));
  assert.ok(await listening('127.0.0.1', Number(env.CAPT_DEV_UI_PORT)), 'the Web UI answers');
  const status = await capt('dev', 'status');
  assert.match(status.stdout, /Temporal: running \(pid \d+\)/);
  assert.match(status.stdout, /worker:\s+running \(pid \d+\)/);
  assert.match(status.stdout, new RegExp(`database: ${home}/dev/temporal\\.db`));
  const again = await capt('dev', 'start');
  assert.equal(again.code, 0, 'start is idempotent');
  assert.equal((await processesMentioning([`${home}/dev/temporal.db`])).length, 1, 'one dev server, not two');

  const versions = JSON.parse((await capt('versions', '-o', 'json')).stdout);
  assert.deepEqual(versions.providers.local.kubernetesVersions, availableKubernetesVersions());
  assert.deepEqual(Object.keys(versions.providers.local.kubectl), availableKubernetesVersions(), 'a kubectl for each version');
  assert.match(versions.capt, /^\d+\.\d+\.\d+$/);

  const stopped = await capt('dev', 'stop');
  assert.equal(stopped.code, 0);
  assert.deepEqual(await processesMentioning([home]), [], 'nothing of the stack keeps running');
  assert.equal(await listening('127.0.0.1', Number(env.CAPT_DEV_PORT)), false);
  assert.match((await capt('dev', 'status')).stdout, /Temporal: stopped/);
});
