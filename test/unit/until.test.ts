import assert from 'node:assert/strict';
import { test } from 'node:test';
import { until } from '../fixtures/until';

// Tiny intervals and timeouts: a retried programming error shows as a timeout, not as the error itself.
const fast = { intervalMs: 5, timeoutMs: 500 };

/** A read that throws `errors` in turn, then returns 'up'; `calls` counts the reads. */
function flaky(...errors: Error[]) {
  const r = {
    calls: 0,
    read: () => {
      r.calls++;
      const err = errors.shift();
      if (err) throw err;
      return 'up';
    },
  };
  return r;
}

test('a TypeError, ReferenceError or assertion failure in a read fails the wait at once, unretried', async () => {
  const mistakes = [
    new TypeError("Cannot read properties of undefined (reading 'machines')"),
    new ReferenceError('status is not defined'),
    new assert.AssertionError({ message: 'expected 3 machines', actual: 2, expected: 3, operator: 'strictEqual' }),
  ];
  for (const mistake of mistakes) {
    const r = flaky(mistake);
    await assert.rejects(until('a read', r.read, fast), mistake);
    assert.equal(r.calls, 1, mistake.message);
  }
});

test('an error in done (a TypeError, or a hook it runs failing) fails the wait at once', async () => {
  for (const mistake of [new TypeError('s.controlPlane is undefined'), new Error('kill: no such process')]) {
    let calls = 0;
    const done = async () => {
      calls++;
      throw mistake;
    };
    await assert.rejects(
      until('a read', () => 'up', { ...fast, done }),
      mistake,
    );
    assert.equal(calls, 1, mistake.message);
  }
});

test('a read that is briefly unavailable is retried until it answers', async () => {
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:7233'), { code: 'ECONNREFUSED' });
  // How fetch reports a server that is not listening: a TypeError with the system error as its cause.
  const fetchFailed = new TypeError('fetch failed', { cause: refused });
  const r = flaky(refused, fetchFailed, new Error('workflow not found'));
  assert.equal(await until('a read', r.read, fast), 'up');
  assert.equal(r.calls, 4);
});

test('a read that never answers times out, naming what it waited for and the last error', async () => {
  const r = flaky(...Array.from({ length: 1000 }, () => new Error('14 UNAVAILABLE: connection refused')));
  await assert.rejects(
    until('the cluster', r.read, { intervalMs: 5, timeoutMs: 50 }),
    /^Error: timed out after 0\.05 s waiting for the cluster; last read: undefined; last error: 14 UNAVAILABLE/,
  );
  assert.ok(r.calls > 1);
});
