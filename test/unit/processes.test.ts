import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { runningPid, startDetached, stopProcess } from '../../src/util/processes';
import { processesMentioning } from '../fixtures/leaks';

test('startDetached: a script done before it is looked at succeeds, a daemon is recorded and stopped', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'capt-processes-'));
  try {
    // Many at once, as a scale-up boots machines: some finish before their start time can be read.
    const quick = Array.from({ length: 20 }, (_, i) => startDetached({ name: `quick-${i}`, command: '/bin/true', args: [], stateDir: dir }));
    assert.equal((await Promise.all(quick)).length, 20);
    const pid = await startDetached({ name: 'daemon', command: '/bin/sleep', args: ['60'], stateDir: dir });
    assert.equal(await runningPid(dir, 'daemon'), pid);
    assert.equal(await startDetached({ name: 'daemon', command: '/bin/sleep', args: ['60'], stateDir: dir }), pid, 'get-or-start: no second process');
    await stopProcess(dir, 'daemon');
    assert.equal(await runningPid(dir, 'daemon'), undefined);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('startDetached goes through the launcher: a command that cannot start fails, output reaches the log, and the caller still exits when done', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'capt-processes-'));
  try {
    await assert.rejects(startDetached({ name: 'missing', command: join(dir, 'no-such-command'), args: [], stateDir: dir }), /ENOENT/);
    // A CLI that started a daemon exits by itself: the launcher holds it only while a start is pending.
    const script = `require(${JSON.stringify(join(__dirname, '../../src/util/processes.js'))}).startDetached({ name: 'd', command: '/bin/sh', args: ['-c', 'echo hello; exec sleep 30'], stateDir: ${JSON.stringify(dir)} }).then((pid) => console.log(pid, process.pid))`;
    const { stdout } = await promisify(execFile)(process.execPath, ['-e', script], { timeout: 20_000 });
    const [pid, parent] = stdout.trim().split(' ').map(Number);
    assert.equal(await runningPid(dir, 'd'), pid, 'the daemon outlives the process that started it');
    // The launcher belongs to the process that forked it, and goes with it.
    for (const deadline = Date.now() + 5000; (await processesMentioning([`process-launcher-main.js ${parent}`])).length; await sleep(100)) {
      assert.ok(Date.now() < deadline, 'the launcher exits with its parent');
    }
    for (const deadline = Date.now() + 5000; !/hello/.test(await readFile(join(dir, 'd.log'), 'utf8')); await sleep(100)) assert.ok(Date.now() < deadline, 'output reaches the log');
    await stopProcess(dir, 'd');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
