import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { BridgeLease } from '../../src/bridge/bridge-lease';
import { managementKubeconfig, startManagementApi, stopManagementApi } from '../../src/dev/management-api';
import { availableKubernetesVersions, kubectlFor } from '../../src/tools';
import { freePort } from '../../src/util/free-port';
import { runProgram } from '../fixtures/capt-cli';

/**
 * Several bridges, one at a time: the Lease on the real management API, as two bridges would contend for it
 * (short durations, so expiry is seconds).
 */

let dir: string;
let home: string;
let kubeconfig: string;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'capt-lease-'));
  home = await mkdtemp(join(tmpdir(), 'capt-home-'));
  process.env.CAPT_HOME = home;
  await startManagementApi(dir, await freePort('127.0.0.1'), () => undefined);
  kubeconfig = await managementKubeconfig(dir);
});

after(async () => {
  await stopManagementApi(dir);
  await rm(dir, { recursive: true, force: true });
  await rm(home, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('one bridge holds the Lease; another takes it only once it is released or left unrenewed past its duration', async () => {
  const a = new BridgeLease(kubeconfig, { identity: 'bridge-a', durationSeconds: 2 });
  const b = new BridgeLease(kubeconfig, { identity: 'bridge-b', durationSeconds: 2 });
  assert.equal(await a.hold(), true, 'the first takes the Lease it creates');
  assert.equal(await b.hold(), false, 'the second stands by');
  // Renewed within its duration, it stays the first's, however long.
  for (let i = 0; i < 4; i++) {
    await sleep(1000);
    assert.equal(await a.hold(), true);
    assert.equal(await b.hold(), false, `renewed, the Lease is not taken (${i + 1} s)`);
  }
  // Left unrenewed, the second takes it once its duration has passed by the second's own clock.
  assert.equal(await b.hold(), false);
  await sleep(2500);
  assert.equal(await b.hold(), true, 'unrenewed for its duration, the Lease is taken');
  assert.equal(await a.hold(), false, 'the first, back, finds it held');

  const file = join(dir, 'admin.kubeconfig');
  await writeFile(file, kubeconfig, { mode: 0o600 });
  const shown = await runProgram(kubectlFor(availableKubernetesVersions().at(-1)!), [
    '--kubeconfig',
    file,
    '-n',
    'kube-system',
    'get',
    'lease',
    'capt-bridge',
    '-o',
    'jsonpath={.spec.holderIdentity} {.spec.leaseTransitions}',
  ]);
  assert.equal(shown.code, 0, shown.stderr);
  assert.equal(shown.stdout, 'bridge-b 1', 'kubectl shows the holder and one transition');

  // Released on a clean stop, it is free at once.
  await b.release();
  assert.equal(await a.hold(), true, 'a released Lease is taken without waiting');
  assert.equal(await b.hold(), false);
});
