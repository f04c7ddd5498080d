import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { afterEach, test } from 'node:test';
import { freePort, freePortBetween, portRange, reservePorts } from '../../src/util/free-port';

const saved = process.env.CAPT_PORT_RANGE;
afterEach(() => {
  if (saved === undefined) delete process.env.CAPT_PORT_RANGE;
  else process.env.CAPT_PORT_RANGE = saved;
});

test('CAPT_PORT_RANGE is read as LOW-HIGH; anything else is refused with what to write', () => {
  assert.deepEqual(portRange({ CAPT_PORT_RANGE: '20000-20099' }), { low: 20000, high: 20099 });
  assert.equal(portRange({}), undefined);
  for (const bad of ['20000', '20099-20000', '80-90', '20000-70000', ' 1-2', '2e4-3e4'])
    assert.throws(() => portRange({ CAPT_PORT_RANGE: bad }), /CAPT_PORT_RANGE=.* is not a port range: write LOW-HIGH/);
});

test('ports picked in a row fall inside CAPT_PORT_RANGE and never repeat, though none is bound yet', async () => {
  process.env.CAPT_PORT_RANGE = '23000-23039';
  const picks: number[] = [];
  for (let i = 0; i < 30; i++) picks.push(await freePort());
  assert.equal(new Set(picks).size, 30, `distinct: ${picks.join(' ')}`);
  assert.ok(
    picks.every((p) => p >= 23000 && p <= 23039),
    picks.join(' '),
  );
});

test('a port something listens on is not picked', async () => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  try {
    process.env.CAPT_PORT_RANGE = `${port}-${port}`;
    await assert.rejects(freePortBetween(1024, 65535), new RegExp(`no free TCP port between ${port} and ${port}`));
  } finally {
    server.close();
  }
});

test('a span CAPT_PORT_RANGE does not overlap is refused, saying so', async () => {
  process.env.CAPT_PORT_RANGE = '40000-40099';
  await assert.rejects(
    freePortBetween(10_000, 32_767),
    /CAPT_PORT_RANGE=40000-40099 leaves no port between 10000 and 32767/,
  );
});

test('a port reserved for a server not started yet is never picked, though it is free', async () => {
  process.env.CAPT_PORT_RANGE = '23100-23103';
  reservePorts([23100, 23102]);
  const picks = new Set<number>();
  // The two unreserved ports, then none: a reserved port is not offered even when nothing else is left.
  for (let i = 0; i < 2; i++) picks.add(await freePort());
  assert.deepEqual([...picks].sort(), [23101, 23103]);
  await assert.rejects(freePort(), /no free TCP port between 23100 and 23103/);
});
