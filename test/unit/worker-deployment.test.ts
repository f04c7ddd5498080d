import assert from 'node:assert/strict';
import { test } from 'node:test';
import { untilRegistered } from '../../src/client/worker-deployment';

/** An attempt that fails with these gRPC codes in turn, then answers. */
function failingWith(codes: number[]) {
  let calls = 0;
  const attempt = async () => {
    const code = codes[calls++];
    if (code === undefined) return 'registered';
    throw Object.assign(new Error(`code ${code}`), { code });
  };
  return { attempt, calls: () => calls };
}

test('a starting worker asks again while Temporal has not registered it yet or is too busy to answer, and not on any other refusal', async () => {
  // NOT_FOUND, FAILED_PRECONDITION, DEADLINE_EXCEEDED, UNAVAILABLE: each may pass by the next ask.
  const transient = failingWith([5, 9, 4, 14]);
  assert.equal(await untilRegistered(10_000, transient.attempt, () => 'build b'), 'registered');
  assert.equal(transient.calls(), 5);
  const refused = failingWith([3]);
  await assert.rejects(
    untilRegistered(10_000, refused.attempt, () => 'build b'),
    /^Error: build b: code 3$/,
  );
  assert.equal(refused.calls(), 1, 'INVALID_ARGUMENT is not asked again');
});
