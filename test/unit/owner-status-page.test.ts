import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { MachineRecord, OwnerStatus } from '../../src/contract/owner';
import { maxRecordsPerPage, ownerStatusPage } from '../../src/contract/owner-status-page';
import { fleetRecords as fleet, runningRecord as running } from '../fixtures/owner-records';

const status = (machines: MachineRecord[]) =>
  ({ name: 'fleet-md-0', replicas: machines.length, machines }) as OwnerStatus;

/** Every page from the first, as the client reads them; `between` may change the records before each next page. */
function readAll(machines: () => MachineRecord[], limit: number, between = (_page: number) => {}) {
  const pages: OwnerStatus[] = [ownerStatusPage(status(machines()), { limit })];
  while (pages.at(-1)!.machinesNext !== undefined) {
    between(pages.length);
    pages.push(ownerStatusPage(status(machines()), { after: pages.at(-1)!.machinesNext, limit }));
  }
  return pages;
}

const bytes = (o: unknown) => Buffer.byteLength(JSON.stringify(o));

test('an owner of 5,000 machines answers in pages far below a payload limit, and the pages hold each record once', () => {
  const machines = fleet(5000);
  const whole = bytes(status(machines));
  const pages = readAll(() => machines, maxRecordsPerPage);
  assert.equal(pages.length, 5);
  const largest = Math.max(...pages.map(bytes));
  assert.ok(largest < 512 * 1024, `the largest page is ${largest} bytes (the whole list: ${whole})`);
  assert.ok(whole > 4 * largest, `the whole list (${whole} bytes) is what paging avoids`);
  const names = pages.flatMap((p) => p.machines.map((m) => m.name));
  assert.deepEqual(
    names,
    machines.map((m) => m.name),
    'every record once, in the order the owner made them',
  );
  assert.ok(pages.every((p) => p.machinesTotal === 5000));
});

test('records that exist through the whole listing are each seen once, whatever is added or removed meanwhile', () => {
  let machines = fleet(30);
  const kept = new Set(machines.filter((_, i) => i % 3 !== 0).map((m) => m.name));
  const pages = readAll(
    () => machines,
    7,
    (page) => {
      // Before each page: the oldest record still there goes (a scale-down), and a new one comes.
      const gone = machines.find((m) => !kept.has(m.name));
      machines = [...machines.filter((m) => m !== gone), running(100 + page, '2026-11-27T13:00:00.000Z')];
    },
  );
  const seen = pages.flatMap((p) => p.machines.map((m) => m.name));
  assert.equal(new Set(seen).size, seen.length, 'no record twice');
  for (const name of kept) assert.ok(seen.includes(name), `${name} was listed`);
});

test('a page of limit 0 is the status without records; a limit above the most per page is cut to it', () => {
  const machines = fleet(1500);
  const none = ownerStatusPage(status(machines), { limit: 0 });
  assert.deepEqual(none.machines, []);
  assert.equal(none.machinesTotal, 1500);
  assert.equal(none.machinesNext, undefined, 'no next page after an empty one');
  const big = ownerStatusPage(status(machines), { limit: 100_000 });
  assert.equal(big.machines.length, maxRecordsPerPage);
  assert.ok(big.machinesNext);
  const last = ownerStatusPage(status(machines), { after: big.machinesNext, limit: 100_000 });
  assert.equal(last.machines.length, 500);
  assert.equal(last.machinesNext, undefined);
});
