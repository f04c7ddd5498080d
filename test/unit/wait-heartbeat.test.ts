import assert from 'node:assert/strict';
import { mock, test } from 'node:test';
import type { Context } from '@temporalio/activity';
import { quietWaitMs, waitHeartbeat } from '../../src/util/heartbeat-poll';

test("a wait's heartbeats reach the SDK only once it has waited quietWaitMs, then every one does", () => {
  mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
  try {
    const sent: unknown[] = [];
    const heartbeat = waitHeartbeat({ heartbeat: (d: unknown) => sent.push(d) } as unknown as Context);
    heartbeat('at once');
    mock.timers.tick(quietWaitMs - 1);
    heartbeat('just before');
    assert.deepEqual(sent, []);
    mock.timers.tick(1);
    heartbeat('at the mark');
    mock.timers.tick(10);
    heartbeat('after');
    assert.deepEqual(sent, ['at the mark', 'after']);
  } finally {
    mock.timers.reset();
  }
});
