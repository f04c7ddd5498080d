import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { holdProcess, isHeld, releaseProcess, runningPid, startDetached, stopProcess } from '../../src/util/processes';
import { processesMentioning } from '../fixtures/leaks';

test('startDetached: a script done before it is looked at succeeds, a daemon is recorded and stopped', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'capt-processes-'));
  try {
    // Many at once, as a scale-up boots machines: some finish before their start time can be read.
    const quick = Array.from({ length: 20 }, (_, i) =>
      startDetached({ name: `quick-${i}`, command: '/bin/true', args: [], stateDir: dir }),
    );
    assert.equal((await Promise.all(quick)).length, 20);
    const pid = await startDetached({ name: 'daemon', command: '/bin/sleep', args: ['60'], stateDir: dir });
    assert.equal(await runningPid(dir, 'daemon'), pid);
    assert.equal(
      await startDetached({ name: 'daemon', command: '/bin/sleep', args: ['60'], stateDir: dir }),
      pid,
      'get-or-start: no second process',
    );
    await stopProcess(dir, 'daemon');
    assert.equal(await runningPid(dir, 'daemon'), undefined);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('startDetached goes through the launcher: a command that cannot start fails, output reaches the log, and the caller still exits when done', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'capt-processes-'));
  try {
    await assert.rejects(
      startDetached({ name: 'missing', command: join(dir, 'no-such-command'), args: [], stateDir: dir }),
      /ENOENT/,
    );
    // A CLI that started a daemon exits by itself: the launcher holds it only while a start is pending.
    const script = `require(${JSON.stringify(join(__dirname, '../../src/util/processes.js'))}).startDetached({ name: 'd', command: '/bin/sh', args: ['-c', 'echo hello; exec sleep 30'], stateDir: ${JSON.stringify(dir)} }).then((pid) => console.log(pid, process.pid))`;
    const { stdout } = await promisify(execFile)(process.execPath, ['-e', script], { timeout: 20_000 });
    const [pid, parent] = stdout.trim().split(' ').map(Number);
    assert.equal(await runningPid(dir, 'd'), pid, 'the daemon outlives the process that started it');
    // The launcher belongs to the process that forked it, and goes with it.
    for (
      const deadline = Date.now() + 5000;
      (await processesMentioning([`process-launcher-main.js ${parent}`])).length;
      await sleep(100)
    ) {
      assert.ok(Date.now() < deadline, 'the launcher exits with its parent');
    }
    for (
      const deadline = Date.now() + 5000;
      !/hello/.test(await readFile(join(dir, 'd.log'), 'utf8'));
      await sleep(100)
    )
      assert.ok(Date.now() < deadline, 'output reaches the log');
    await stopProcess(dir, 'd');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a process whose starter is killed as soon as it is launched is recorded by the launcher: startDetached again finds it and starts no second one', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'capt-processes-'));
  const marker = `capt-orphan-${process.pid}`;
  const spec = { name: 'daemon', command: 'tail', args: ['-f', '/dev/null', marker], stateDir: dir };
  try {
    // The starter launches, then dies before it could write the record itself, as a worker SIGKILLed there would.
    const launcher = JSON.stringify(join(__dirname, '../../src/util/process-launcher.js'));
    const request = JSON.stringify({
      command: spec.command,
      args: spec.args,
      cwd: dir,
      env: {},
      log: join(dir, 'daemon.log'),
      pidFile: join(dir, 'daemon.pid'),
    });
    const script = `require(${launcher}).launch(${request}).then(({ pid }) => process.stdout.write(String(pid), () => process.kill(process.pid, 'SIGKILL')))`;
    const killed = await promisify(execFile)(process.execPath, ['-e', script], { timeout: 20_000 }).catch(
      (err: { stdout: string; signal?: string }) => err,
    );
    assert.equal((killed as { signal?: string }).signal, 'SIGKILL', 'the starter died before it returned');
    const orphan = Number(killed.stdout);
    assert.ok(orphan > 0, `the starter printed the pid it launched: ${killed.stdout}`);
    assert.equal(await startDetached(spec), orphan, 'the retry finds the process the dead starter launched');
    assert.deepEqual(
      (await processesMentioning([marker])).filter((p) => p.cmdline.startsWith('tail')).map((p) => p.pid),
      [orphan],
      'one process, not two',
    );
    await stopProcess(dir, spec.name);
    assert.deepEqual(await processesMentioning([marker]), []);
  } finally {
    // Whatever a failure left running goes too.
    for (const p of await processesMentioning([marker])) process.kill(p.pid, 'SIGKILL');
    await rm(dir, { recursive: true, force: true });
  }
});

test('holdProcess stops a restart-looped command and keeps it stopped until releaseProcess; a process without the loop cannot be held', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'capt-processes-'));
  const marker = `capt-hold-${process.pid}`;
  // tail, not sleep: the loop's own waiting is `sleep`, which holding leaves alone.
  const commands = async () => (await processesMentioning([marker])).filter((p) => p.cmdline.startsWith('tail'));
  const until = async (what: string, ok: () => Promise<boolean>) => {
    for (const deadline = Date.now() + 10_000; !(await ok()); await sleep(100)) assert.ok(Date.now() < deadline, what);
  };
  try {
    const loop = await startDetached({
      name: 'component',
      command: 'tail',
      args: ['-f', '/dev/null', marker],
      stateDir: dir,
      restartAfterSeconds: 1,
    });
    await until('the command runs', async () => (await commands()).length === 1);
    await holdProcess(dir, 'component', 1000);
    assert.deepEqual(await commands(), [], 'the command is stopped');
    assert.equal(await isHeld(dir, 'component'), true);
    await sleep(2500);
    assert.deepEqual(await commands(), [], 'and not restarted after restartAfterSeconds');
    assert.equal(await runningPid(dir, 'component'), loop, 'the loop itself still runs');
    await holdProcess(dir, 'component', 1000); // holding what is held succeeds
    await releaseProcess(dir, 'component');
    await until('the command runs again once released', async () => (await commands()).length === 1);
    assert.equal(await isHeld(dir, 'component'), false);
    await startDetached({ name: 'plain', command: '/bin/sleep', args: ['60'], stateDir: dir });
    await assert.rejects(holdProcess(dir, 'plain'), /plain runs without a restart loop/);
    await assert.rejects(holdProcess(dir, 'absent'), /absent is not running/);
    await stopProcess(dir, 'component');
    await stopProcess(dir, 'plain');
    assert.deepEqual(await commands(), []);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
