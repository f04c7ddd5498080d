import assert from 'node:assert/strict';
import { test } from 'node:test';
import { workerServes } from '../../src/worker/worker-serves';

test('a worker serves everything by default, or what --serve names', () => {
  assert.deepEqual(workerServes(undefined), { core: true, providers: ['local'] });
  assert.deepEqual(workerServes('core'), { core: true, providers: [] });
  assert.deepEqual(workerServes('local'), { core: false, providers: ['local'] });
  assert.deepEqual(workerServes(' core , local '), { core: true, providers: ['local'] });
});

test('--serve refuses what no worker serves, naming what it can', () => {
  assert.throws(
    () => workerServes('core,aws'),
    /'aws' is not something a worker serves; name core and\/or providers \(local\)/,
  );
  assert.throws(() => workerServes(','), /nothing is not something a worker serves/);
});
