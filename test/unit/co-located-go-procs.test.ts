import assert from 'node:assert/strict';
import { test } from 'node:test';
import { coLocatedGoMaxProcs } from '../../src/dev/co-located-go-procs';

test('Temporal nodes sharing a host split its cores between their Go runtimes; one node, or GOMAXPROCS set, keeps Go’s default', () => {
  assert.equal(coLocatedGoMaxProcs(2, 3, {}), '1');
  assert.equal(coLocatedGoMaxProcs(2, 2, {}), '1');
  assert.equal(coLocatedGoMaxProcs(8, 3, {}), '2');
  assert.equal(coLocatedGoMaxProcs(16, 4, {}), '4');
  assert.equal(coLocatedGoMaxProcs(2, 1, {}), undefined);
  assert.equal(coLocatedGoMaxProcs(2, 3, { GOMAXPROCS: '2' }), undefined);
});
