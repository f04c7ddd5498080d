import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { runningPid, startDetached, stopProcess } from '../../src/util/processes';

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
