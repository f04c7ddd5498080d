import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MachinePhase } from '../../src/contract/machine';
import type { MachineRecord } from '../../src/contract/owner';
import type { OwnerState } from '../../workflows/shared/owner-runtime';
import {
  carriedOwnerState,
  packRecords,
  resumedOwnerState,
  unpackRecords,
  type PackedRecords,
} from '../../workflows/shared/packed-records';
import { fleetRecords } from '../fixtures/owner-records';

const bytes = (o: unknown) => Buffer.byteLength(JSON.stringify(o));
/** As continue-as-new carries it: through JSON. */
const throughPayload = <T>(o: T): T => JSON.parse(JSON.stringify(o)) as T;

/** 5,000 running workers mid-rollout: a 10% surge of new machines, half still provisioning, and old ones leaving. */
function rollingFleet(): MachineRecord[] {
  const machines = fleetRecords(5000).map((r, i) => (i % 10 === 0 ? { ...r, deleting: true } : r));
  for (let i = 0; i < 500; i++) {
    const createdAt = new Date(Date.UTC(2026, 10, 27, 14, 0, Math.floor(i / 50))).toISOString();
    const name = `fleet-md-0-5be0c2d1-${i.toString(36).padStart(5, '0')}`;
    const surge: MachineRecord = { ...machines[0]!, name, templateHash: '5be0c2d1', createdAt, deleting: false };
    if (i % 2) machines.push(surge);
    else {
      const { address: _address, runningSince: _since, ...provisioning } = surge;
      machines.push({ ...provisioning, phase: MachinePhase.Provisioning, sequence: 2 });
    }
  }
  return machines;
}

test('5,000 workers and a rollout surge are carried packed far below the 512 KB payload warning, and come back exactly', () => {
  const machines = rollingFleet();
  const packed = throughPayload(packRecords(machines));
  const size = bytes(packed);
  assert.ok(size < 320 * 1024, `5,500 records packed are ${size} bytes`);
  assert.ok(bytes(machines) > 3 * size, `whole (${bytes(machines)} bytes) is over three times packed (${size})`);
  assert.deepStrictEqual(unpackRecords(packed), machines);
});

test('every optional field of a record, and absent ones, come back as they went', () => {
  const base = fleetRecords(1)[0]!;
  const odd: MachineRecord[] = [
    { ...base, failureDomain: 'fd4', blocker: 'drain: pod default/web-0 cannot be evicted', marked: true },
    {
      ...base,
      name: 'standalone',
      node: { conditions: [{ type: 'Ready', status: 'False', since: '2026-11-27T12:00:01.000Z' }], gone: true },
      remediate: true,
      skipRemediation: false,
    },
    { ...base, name: 'cp-', remediate: false, skipRemediation: true, createdAt: 'yesterday', runningSince: 'today' },
    { ...base, createdAt: '2026-11-27T12:00:00Z', runningSince: '2026-11-26T12:00:00.000Z' },
  ];
  const { address: _a, runningSince: _r, ...bare } = base;
  odd.push(bare);
  assert.deepStrictEqual(unpackRecords(throughPayload(packRecords(odd))), odd);
  assert.deepStrictEqual(unpackRecords(packRecords([])), []);
});

test("an owner's state resumes from its packed records and from the whole records earlier builds carried", () => {
  const state: OwnerState = { spec: { replicas: 3 }, machines: fleetRecords(3), step: 'Running', reports: 7 };
  const carried = throughPayload(carriedOwnerState(state));
  assert.ok(!Array.isArray(carried.machines), 'records are carried packed');
  assert.deepStrictEqual(resumedOwnerState(carried), state);
  // A run continued by a build before packing: its records are an array.
  assert.deepStrictEqual(resumedOwnerState(throughPayload(state)), state);
});

test('records packed in a format this build does not know are refused, saying which', () => {
  const future = { ...packRecords(fleetRecords(2)), packed: 2 } as unknown as PackedRecords;
  assert.throws(() => unpackRecords(future), /packed as format 2: this build reads format 1 only/);
});
