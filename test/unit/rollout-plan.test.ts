import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  planMachines,
  planRollout,
  rolloutBounds,
  type PlanMachine,
} from '../../workflows/machine-deployment/rollout-plan';
import { MachinePhase } from '../../src/contract/machine';
import { recordRevision } from '../../workflows/shared/revisions';
import { type Revision } from '../../src/contract/owner';
import { msUntilRolloutAfter, rolloutAfterDue } from '../../workflows/shared/rollout-after';
import { newRecord } from '../../workflows/shared/machine-pool';

type Strategy = Parameters<typeof planRollout>[0]['strategy'];
const rolling = (maxSurge: number | string, maxUnavailable: number | string): Strategy => ({
  type: 'RollingUpdate',
  maxSurge,
  maxUnavailable,
  deletionOrder: 'Oldest',
});

/**
 * Drives the plan as the workflow does, against a simulated pool: created machines become available
 * `readyAfter` ticks later, deleted ones disappear one tick later. Checks the bounds at every tick.
 */
function simulate(
  replicas: number,
  strategy: Strategy,
  start: PlanMachine[],
  opts: { readyAfter?: number; scaleAt?: [number, number] } = {},
) {
  let machines = start.map((m) => ({ ...m, age: 99 }));
  let serial = 0;
  let want = replicas;
  const { maxSurge, maxUnavailable } = rolloutBounds(strategy, replicas);
  for (let tick = 0; tick < 200; tick++) {
    if (opts.scaleAt && tick === opts.scaleAt[0]) want = opts.scaleAt[1];
    machines = machines
      .filter((m) => !m.deleting)
      .map((m) => ({
        ...m,
        age: m.age + 1,
        running: m.age + 1 >= (opts.readyAfter ?? 2),
        available: m.age + 1 >= (opts.readyAfter ?? 2),
      }));
    const plan = planRollout({
      replicas: want,
      strategy,
      currentSet: 'new',
      setsNewestFirst: ['new', 'old'],
      machines,
    });
    for (const name of plan.remove) machines.find((m) => m.name === name)!.deleting = true;
    for (let i = 0; i < (plan.create?.count ?? 0); i++)
      machines.push({
        name: `n${serial++}`,
        set: 'new',
        createdAt: String(tick).padStart(4, '0'),
        deleting: false,
        running: false,
        available: false,
        marked: false,
        age: 0,
      });
    if (want === replicas) {
      assert.ok(
        machines.length <= replicas + maxSurge,
        `tick ${tick}: ${machines.length} machines > ${replicas} + maxSurge ${maxSurge}`,
      );
      const available = machines.filter((m) => !m.deleting && m.available).length;
      assert.ok(
        available >= replicas - maxUnavailable,
        `tick ${tick}: ${available} available < ${replicas} - maxUnavailable ${maxUnavailable}`,
      );
    }
    if (plan.complete) return { ticks: tick, machines };
  }
  throw new Error('the rollout never completed');
}

const oldMachines = (n: number): PlanMachine[] =>
  Array.from({ length: n }, (_, i) => ({
    name: `o${i}`,
    set: 'old',
    createdAt: `000${i}`,
    deleting: false,
    running: true,
    available: true,
    marked: false,
  }));

for (const [surge, unavailable] of [
  [1, 0],
  [0, 1],
  [0, 2],
  [2, 0],
  [2, 2],
  ['25%', '25%'],
  ['100%', 0],
  [0, '100%'],
  ['0%', '10%'],
] as const) {
  test(`rolling 5 machines with maxSurge ${surge}, maxUnavailable ${unavailable} keeps both bounds and ends with 5 new machines`, () => {
    const { machines } = simulate(5, rolling(surge, unavailable), oldMachines(5));
    assert.deepEqual(
      machines.filter((m) => !m.deleting).map((m) => m.set),
      Array(5).fill('new'),
    );
  });
}

test('percentages: surge rounds up, unavailable rounds down', () => {
  assert.deepEqual(rolloutBounds(rolling('25%', '25%'), 5), { maxSurge: 2, maxUnavailable: 1 });
  assert.deepEqual(rolloutBounds(rolling('10%', '10%'), 5), { maxSurge: 1, maxUnavailable: 0 });
  assert.deepEqual(
    rolloutBounds(rolling('0%', '10%'), 5),
    { maxSurge: 0, maxUnavailable: 1 },
    'both rounding to 0: maxUnavailable 1, as Cluster API',
  );
});

test('a scale-down in the middle of a rollout ends with the new count, all new', () => {
  const { machines } = simulate(5, rolling(1, 0), oldMachines(5), { scaleAt: [3, 2] });
  assert.deepEqual(
    machines.filter((m) => !m.deleting).map((m) => m.set),
    ['new', 'new'],
  );
});

test('paused: no machine is replaced, a scale-up adds machines of the running template', () => {
  const plan = planRollout({
    replicas: 6,
    strategy: rolling(1, 0),
    paused: { surplus: 0 },
    currentSet: 'new',
    setsNewestFirst: ['new', 'old'],
    machines: oldMachines(5),
  });
  assert.deepEqual(plan, { create: { set: 'old', count: 1 }, remove: [], complete: false });
  const idle = planRollout({
    replicas: 5,
    strategy: rolling(1, 0),
    paused: { surplus: 0 },
    currentSet: 'new',
    setsNewestFirst: ['new', 'old'],
    machines: oldMachines(5),
  });
  assert.deepEqual(
    [idle.create, idle.remove, idle.waiting],
    [undefined, [], 'paused: scaling applies, the rollout waits for resume'],
  );
  const surged = [...oldMachines(5), { ...oldMachines(1)[0]!, name: 'n0', set: 'new' }];
  const held = planRollout({
    replicas: 5,
    strategy: rolling(1, 0),
    paused: { surplus: 1 },
    currentSet: 'new',
    setsNewestFirst: ['new', 'old'],
    machines: surged,
  });
  assert.deepEqual(
    [held.create, held.remove],
    [undefined, []],
    'the surge machine there at the pause stays, nothing is removed',
  );
});

test('OnDelete: nothing is removed; a deleted machine comes back on the new template', () => {
  const onDelete: Strategy = { type: 'OnDelete', maxSurge: 1, maxUnavailable: 0, deletionOrder: 'Random' };
  const idle = planRollout({
    replicas: 5,
    strategy: onDelete,
    currentSet: 'new',
    setsNewestFirst: ['new', 'old'],
    machines: oldMachines(5),
  });
  assert.deepEqual([idle.create, idle.remove], [undefined, []]);
  const machines = oldMachines(5).map((m, i) => (i === 2 ? { ...m, deleting: true } : m));
  assert.deepEqual(
    planRollout({ replicas: 5, strategy: onDelete, currentSet: 'new', setsNewestFirst: ['new', 'old'], machines })
      .create,
    { set: 'new', count: 1 },
  );
});

test('machines annotated for deletion go first, then unhealthy ones, then by deletion order', () => {
  const machines = oldMachines(4).map((m) => ({ ...m, set: 'new' }));
  machines[3] = { ...machines[3]!, marked: true };
  machines[1] = { ...machines[1]!, running: false, available: false };
  const plan = planRollout({
    replicas: 2,
    strategy: { ...rolling(1, 0), deletionOrder: 'Newest' },
    currentSet: 'new',
    setsNewestFirst: ['new'],
    machines,
  });
  assert.deepEqual(plan.remove, ['o3', 'o1']);
});

test('revisions: the number only grows, a returning template moves to the new number, the limit prunes all but kept ones', () => {
  const rev = (hash: string, version: string) => ({ hash, version, cause: 'test', at: 't', template: { version } });
  let history: Revision[] = [];
  history = recordRevision(history, rev('a', 'v1.35.4'), 10);
  history = recordRevision(history, rev('b', 'v1.36.3'), 10);
  assert.equal(
    recordRevision(history, rev('b', 'v1.36.3'), 10),
    history,
    'the current template again is no new revision',
  );
  history = recordRevision(history, rev('a', 'v1.35.4'), 10);
  assert.deepEqual(
    history.map((r) => [r.revision, r.hash, r.change]),
    [
      [2, 'b', 'version v1.35.4 -> v1.36.3'],
      [3, 'a', 'version v1.36.3 -> v1.35.4'],
    ],
  );
  history = recordRevision(history, rev('c', 'v1.36.3'), 0, (r) => r.hash === 'b');
  assert.deepEqual(
    history.map((r) => r.revision),
    [2, 4],
    'limit 0 keeps only the current revision and the kept one',
  );
});

test('rolloutAfter: due once it has passed and a machine predates it, never again after its restart; a timer until then', () => {
  const machine = newRecord('m', 'h', 'v1.36.3', '2026-01-01T00:00:00.000Z');
  const after = '2026-06-01T00:00:00.000Z';
  const now = Date.parse('2026-07-01T00:00:00.000Z');
  assert.equal(rolloutAfterDue(after, undefined, [machine], now), true);
  assert.equal(rolloutAfterDue(after, after, [machine], now), false, 'the restart for it happened');
  assert.equal(
    rolloutAfterDue(after, undefined, [{ ...machine, createdAt: '2026-06-15T00:00:00.000Z' }], now),
    false,
    'every machine is newer',
  );
  assert.equal(rolloutAfterDue(after, undefined, [machine], Date.parse('2026-05-01T00:00:00.000Z')), false, 'not yet');
  assert.equal(msUntilRolloutAfter(after, Date.parse(after) - 1000), 1050);
  assert.equal(msUntilRolloutAfter(after, now), undefined);
});

test('machines past the max age are replaced as an older template would be, within maxSurge and maxUnavailable', () => {
  const at = (s: number) => new Date(Date.UTC(2026, 10, 27, 12, 0, s)).toISOString();
  const runningAt = (name: string, s: number) => ({
    ...newRecord(name, 'cur', 'v1.36.3', at(s)),
    phase: MachinePhase.Running,
    runningSince: at(s + 5),
  });
  const records = [runningAt('a', 0), runningAt('b', 10), runningAt('c', 40)];
  const now = Date.parse(at(70));
  const machines = planMachines(records, 0, now, 60);
  assert.deepEqual(
    machines.filter((m) => m.expired).map((m) => m.name),
    ['a', 'b'],
    'due 60 s after they were made',
  );
  const input = { replicas: 3, strategy: rolling(1, 0), currentSet: 'cur', setsNewestFirst: ['cur'] };
  assert.deepEqual(planRollout({ ...input, machines }), {
    remove: [],
    complete: false,
    create: { set: 'cur', count: 1 },
  });
  // The surge machine is available: one expired machine goes (the oldest, by the deletion order), none beyond the bounds.
  const surged = planMachines([...records, runningAt('d', 65)], 0, now, 60);
  assert.deepEqual(planRollout({ ...input, machines: surged }), { remove: ['a'], complete: false });
  assert.deepEqual(
    planMachines(records, 0, now).filter((m) => m.expired),
    [],
    'no max age, no expiry',
  );
});

test('machines asked to be replaced (capt rotate certificates) go as past-age ones do, and no other', () => {
  const at = (s: number) => new Date(Date.UTC(2026, 10, 27, 12, 0, s)).toISOString();
  const running = (name: string) => ({
    ...newRecord(name, 'cur', 'v1.36.3', at(0)),
    phase: MachinePhase.Running,
    runningSince: at(5),
  });
  const records = [running('a'), running('b'), running('c')];
  const now = Date.parse(at(70));
  const asked = new Set(['b']);
  assert.deepEqual(
    planMachines(records, 0, now, undefined, asked)
      .filter((m) => m.expired)
      .map((m) => m.name),
    ['b'],
  );
  const input = { replicas: 3, strategy: rolling(1, 0), currentSet: 'cur', setsNewestFirst: ['cur'] };
  assert.deepEqual(planRollout({ ...input, machines: planMachines(records, 0, now, undefined, asked) }), {
    remove: [],
    complete: false,
    create: { set: 'cur', count: 1 },
  });
  const surged = planMachines([...records, running('d')], 0, now, undefined, asked);
  assert.deepEqual(planRollout({ ...input, machines: surged }), { remove: ['b'], complete: false });
});
