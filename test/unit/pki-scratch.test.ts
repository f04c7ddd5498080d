import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { removeOrphanScratch } from '../../src/pki/scratch';

test('a signing scratch folder left by a process SIGKILLed mid-signing is removed by the next sweep; a live process keeps its own', async () => {
  const root = await mkdtemp(join(tmpdir(), 'capt-scratch-test-'));
  try {
    // A real process inside withScratch, holding a key file, killed before its finally can run.
    const child = spawn(
      process.execPath,
      [
        '-e',
        `require(${JSON.stringify(join(__dirname, '../../src/pki/scratch.js'))}).withScratch(async (dir) => {
          require('node:fs').writeFileSync(dir + '/ca.key', 'key', { mode: 0o600 });
          console.log(dir);
          await new Promise(() => setInterval(() => {}, 1000));
        });`,
      ],
      { env: { ...process.env, TMPDIR: root }, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const dir = await new Promise<string>((resolve) =>
      child.stdout.once('data', (d: Buffer) => resolve(d.toString().trim())),
    );
    assert.match(dir, new RegExp(`/capt-pki-${child.pid}-`), 'named for the process that made it');
    assert.equal(await removeOrphanScratch(root), 0, 'its process still runs: kept');
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    // A folder of this (live) process, one of an exited process, and names the sweep must leave alone.
    const exited = spawnSync(process.execPath, ['-e', '0']).pid;
    await mkdir(join(root, `capt-pki-${process.pid}-live`));
    await mkdir(join(root, `capt-pki-${exited}-gone`));
    await writeFile(join(root, 'capt-pki-notapid'), '');
    await mkdir(join(root, 'elsewhere'));
    assert.equal(await removeOrphanScratch(root), 2);
    assert.deepEqual((await readdir(root)).sort(), [`capt-pki-${process.pid}-live`, 'capt-pki-notapid', 'elsewhere']);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
