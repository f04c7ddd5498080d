import assert from 'node:assert/strict';
import { test } from 'node:test';
import { forEachBounded } from '../../src/util/bounded-parallel';

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('every item runs once, never more than the limit at a time, and a freed slot is taken at once', async () => {
  let inFlight = 0;
  let most = 0;
  const done: number[] = [];
  // Item 0 is slow: the others must not wait for it in waves.
  await forEachBounded([...Array(20).keys()], 4, async (i) => {
    inFlight++;
    most = Math.max(most, inFlight);
    await tick(i === 0 ? 60 : 2);
    done.push(i);
    inFlight--;
  });
  assert.equal(most, 4);
  assert.deepEqual(
    [...done].sort((a, b) => a - b),
    [...Array(20).keys()],
  );
  assert.equal(done.at(-1), 0, 'the slow item ends last: the rest went on in the other three slots');
});

test('the first failure is thrown once the items already started have settled, and no new item starts', async () => {
  const started: number[] = [];
  let settled = 0;
  await assert.rejects(
    forEachBounded([...Array(10).keys()], 3, async (i) => {
      started.push(i);
      await tick(5);
      settled++;
      if (i === 1) throw new Error('item 1 failed');
    }),
    /item 1 failed/,
  );
  assert.equal(settled, started.length, 'nothing left running');
  assert.ok(started.length < 10, `items after the failure were not started (${started.join(', ')})`);
});

test('no items: nothing runs', async () => {
  let runs = 0;
  await forEachBounded([], 5, async () => void runs++);
  assert.equal(runs, 0);
});

test('no item starts after the deadline; the ones started finish, the rest are left', async () => {
  const started: number[] = [];
  let settled = 0;
  const until = Date.now() + 30;
  await forEachBounded(
    [...Array(100).keys()],
    2,
    async (i) => {
      started.push(i);
      await tick(10);
      settled++;
    },
    until,
  );
  assert.equal(settled, started.length, 'every started item finished');
  assert.ok(started.length >= 2 && started.length < 100, `started ${started.length} of 100`);
  // Each started before the deadline: at most a slot's item per 10 ms, two slots.
  assert.ok(started.length <= 2 * 4, `started ${started.length}: not after the deadline`);
});
