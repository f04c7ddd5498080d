import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chown, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { readMachineFile, readMachineJson } from '../../providers/local/machine-files';

const machineId = 2_000_123_456;
let dir: string;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'machine-files-'));
  await writeFile(join(dir, 'report.json'), '{"state":"failed","command":"x"}');
  await writeFile(join(dir, 'big.log'), 'a'.repeat(10_000) + 'THE END');
  await writeFile(join(dir, 'host-secret'), 'secret');
  for (const f of ['report.json', 'big.log']) await chown(join(dir, f), machineId, machineId);
  await symlink(join(dir, 'host-secret'), join(dir, 'link.json'));
  await mkdir(join(dir, 'folder'));
  await chown(join(dir, 'folder'), machineId, machineId);
  execFileSync('mkfifo', [join(dir, 'fifo')]);
  await chown(join(dir, 'fifo'), machineId, machineId);
});
after(() => rm(dir, { recursive: true, force: true }));

test("a machine's own regular file is read, its last bytes only when it is big", async () => {
  assert.deepEqual(await readMachineJson(join(dir, 'report.json'), machineId), { state: 'failed', command: 'x' });
  const tail = await readMachineFile(join(dir, 'big.log'), machineId, 100);
  assert.equal(tail?.length, 100);
  assert.ok(tail?.endsWith('THE END'));
  assert.equal(await readMachineJson(join(dir, 'big.log'), machineId, 1000), undefined, 'too big for JSON: absent');
});

test('a symlink, a file the machine does not own, a folder, a FIFO and a missing file read as absent, at once', async () => {
  assert.equal(await readMachineFile(join(dir, 'link.json'), machineId, 100), undefined, 'never through a symlink');
  assert.equal(
    await readMachineFile(join(dir, 'host-secret'), machineId, 100),
    undefined,
    'a host file the machine does not own',
  );
  assert.equal(await readMachineFile(join(dir, 'folder'), machineId, 100), undefined);
  assert.equal(await readMachineFile(join(dir, 'fifo'), machineId, 100), undefined, 'a FIFO does not block the read');
  assert.equal(await readMachineFile(join(dir, 'missing'), machineId, 100), undefined);
});
