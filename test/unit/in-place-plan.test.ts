import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planRollout, rolloutBounds, type PlanMachine } from '../../workflows/machine-deployment/rollout-plan';
import { inPlaceSets, workerInPlace } from '../../workflows/machine-deployment/in-place-sets';
import { recordMachineReports, isRunning, newRecord } from '../../workflows/shared/machine-pool';
import { MachinePhase } from '../../src/contract/machine';
import type { MachineTemplateModel } from '../../src/api/model';
import type { InPlaceCapability } from '../../src/contract/in-place';

type Strategy = Parameters<typeof planRollout>[0]['strategy'];
const rolling = (maxSurge: number, maxUnavailable: number): Strategy => ({
  type: 'RollingUpdate',
  maxSurge,
  maxUnavailable,
  deletionOrder: 'Oldest',
});
const machine = (name: string, set: string, extra: Partial<PlanMachine> = {}): PlanMachine => ({
  name,
  set,
  createdAt: '0000',
  deleting: false,
  running: true,
  available: true,
  marked: false,
  ...extra,
});

/**
 * Drives the plan as the workflow does, updates in place included: an updated machine moves to the new set and
 * is unavailable for `readyAfter` ticks, as a created one is. Checks the bounds at every tick and returns how
 * many machines were created and updated.
 */
function simulate(replicas: number, strategy: Strategy, start: PlanMachine[], inPlace: string[], readyAfter = 2) {
  let machines = start.map((m) => ({ ...m, age: 99 }));
  let created = 0;
  const updated = new Set<string>();
  const { maxSurge, maxUnavailable } = rolloutBounds(strategy, replicas);
  for (let tick = 0; tick < 500; tick++) {
    machines = machines
      .filter((m) => !m.deleting)
      .map((m) => {
        const ready = m.age + 1 >= readyAfter;
        // A machine updating keeps running (its phase stays Running), and is not available until it is done.
        return {
          ...m,
          age: m.age + 1,
          available: ready,
          running: ready || !!m.updating,
          updating: m.updating && !ready,
        };
      });
    const plan = planRollout({
      replicas,
      strategy,
      currentSet: 'new',
      setsNewestFirst: ['new', 'old', 'older'],
      machines,
      inPlaceSets: inPlace,
    });
    for (const name of plan.remove) machines.find((m) => m.name === name)!.deleting = true;
    for (const name of plan.update ?? []) {
      const m = machines.find((x) => x.name === name)!;
      assert.notEqual(m.set, 'new', `tick ${tick}: ${name} is updated twice`);
      Object.assign(m, { set: 'new', age: 0, available: false, running: true, updating: true });
      updated.add(name);
    }
    for (let i = 0; i < (plan.create?.count ?? 0); i++)
      machines.push({ ...machine(`n${created++}`, 'new'), running: false, available: false, age: 0 });
    assert.ok(machines.length <= replicas + maxSurge, `tick ${tick}: ${machines.length} machines`);
    const available = machines.filter((m) => !m.deleting && m.available).length;
    assert.ok(available >= replicas - maxUnavailable, `tick ${tick}: ${available} available`);
    if (plan.complete) return { created, updated: updated.size, machines };
  }
  throw new Error('the rollout never completed');
}

const ten = (set = 'old') => Array.from({ length: 10 }, (_, i) => machine(`o${i}`, set));

test('maxUnavailable 0: one machine surges first, then the old ones are updated in place one at a time', () => {
  const r = simulate(10, rolling(1, 0), ten(), ['old']);
  assert.equal(r.created, 1, 'one surge machine, no replacements');
  assert.equal(r.updated, 10, 'every old machine updated in place');
  // The surplus at the end goes by deletion order: 10 machines are left, all on the new set.
  assert.equal(r.machines.filter((m) => !m.deleting).length, 10);
});

test('maxUnavailable 3: three updated at once, no machine created', () => {
  const plan = planRollout({
    replicas: 10,
    strategy: rolling(1, 3),
    currentSet: 'new',
    setsNewestFirst: ['new', 'old'],
    machines: ten(),
    inPlaceSets: ['old'],
  });
  assert.equal(plan.update?.length, 3);
  assert.deepEqual([plan.remove, plan.create], [[], undefined]);
  const r = simulate(10, rolling(1, 3), ten(), ['old']);
  assert.deepEqual([r.created, r.updated], [0, 10]);
});

test('only sets the provider can move are updated; the rest, and marked or expired machines, are replaced', () => {
  const start = [
    ...Array.from({ length: 4 }, (_, i) => machine(`a${i}`, 'old')),
    ...Array.from({ length: 4 }, (_, i) => machine(`b${i}`, 'older')),
    machine('marked', 'old', { marked: true }),
    machine('expired', 'old', { expired: true }),
  ];
  const r = simulate(10, rolling(1, 1), start, ['old']);
  assert.equal(r.updated, 4, 'the four plain machines of the set that can move');
  assert.equal(r.created, 6, 'the other set, the marked and the expired machine are replaced');
});

test('without in-place sets the plan is what it was: every old machine replaced', () => {
  const r = simulate(10, rolling(1, 0), ten(), []);
  assert.deepEqual([r.created, r.updated], [10, 0]);
});

const template = (version: string, bootstrap = 'a'): MachineTemplateModel =>
  ({
    version,
    labels: {},
    annotations: {},
    bootstrap: { kind: 'KubeadmConfigTemplate', name: bootstrap, config: {} },
    infrastructure: { kind: 'LocalMachineTemplate', name: 'm', spec: {} },
  }) as MachineTemplateModel;
const local: InPlaceCapability = { worker: ['version'], controlPlane: [] };
const spec = { strategy: rolling(1, 0) };

test('the provider, the owner and the change decide whether machines move in place, and say why not', () => {
  const from = { template: template('v1.35.4') };
  assert.deepEqual(workerInPlace(local, spec, from, { template: template('v1.36.3') }), { inPlace: true });
  const why = (c: ReturnType<typeof workerInPlace>) => (c.inPlace ? 'in place' : c.why);
  assert.match(why(workerInPlace(undefined, spec, from, { template: template('v1.36.3') })), /provider updates no/);
  assert.match(
    why(workerInPlace(local, { ...spec, inPlaceUpdates: false }, from, { template: template('v1.36.3') })),
    /turned off/,
  );
  assert.match(
    why(
      workerInPlace(local, { strategy: { ...spec.strategy, type: 'OnDelete' } }, from, {
        template: template('v1.36.3'),
      }),
    ),
    /OnDelete/,
  );
  assert.match(why(workerInPlace(local, spec, from, { template: template('v1.36.3', 'b') })), /bootstrap changed/);
  assert.match(why(workerInPlace(local, spec, { template: template('v1.36.3') }, from)), /goes down only/);
  assert.match(why(workerInPlace(local, spec, from, { template: template('v1.36.3'), restartedAt: 'now' })), /restart/);
  const sets = [
    { hash: 'h1', template: template('v1.35.4', 'b') },
    { hash: 'h2', template: template('v1.35.4') },
    { hash: 'h3', template: template('v1.36.3') },
  ];
  assert.deepEqual(inPlaceSets(local, { ...spec } as never, sets), ['h2']);
});

/** A template whose workers join with these kubelet arguments (and, given, one more join setting). */
const withKubelet = (version: string, args: Record<string, string>, name?: string): MachineTemplateModel => {
  const t = template(version);
  const nodeRegistration = { kubeletExtraArgs: args, ...(name ? { name } : {}) };
  return { ...t, bootstrap: { ...t.bootstrap, name: 'k', config: { joinConfiguration: { nodeRegistration } } } };
};

test('new kubelet arguments move a worker in place when the provider restarts kubelets with them, registration-time ones never', () => {
  const both: InPlaceCapability = { worker: ['version', 'kubeletExtraArgs'], controlPlane: [] };
  const why = (c: ReturnType<typeof workerInPlace>) => (c.inPlace ? 'in place' : c.why);
  const from = { template: withKubelet('v1.35.4', { 'max-pods': '110' }) };
  const to = (version: string, args: Record<string, string>, name?: string) => ({
    template: withKubelet(version, args, name),
  });
  assert.equal(why(workerInPlace(both, spec, from, to('v1.35.4', { 'max-pods': '200' }))), 'in place');
  assert.equal(why(workerInPlace(both, spec, from, to('v1.36.3', { 'max-pods': '200', v: '2' }))), 'in place');
  // Kubelet arguments first appearing count alike (no joinConfiguration before).
  assert.equal(
    why(workerInPlace(both, spec, { template: template('v1.35.4') }, to('v1.35.4', { 'max-pods': '200' }))),
    'in place',
  );
  assert.match(
    why(workerInPlace(both, spec, from, to('v1.35.4', { 'max-pods': '110', 'node-labels': 'a=b' }))),
    /kubelet's node-labels changed, which a kubelet reads only when it registers/,
  );
  assert.match(why(workerInPlace(both, spec, from, to('v1.35.4', { 'max-pods': '200' }, 'x'))), /bootstrap changed/);
  assert.match(why(workerInPlace(local, spec, from, to('v1.35.4', { 'max-pods': '200' }))), /bootstrap changed/);
  assert.match(why(workerInPlace(both, spec, from, to('v1.34.1', { 'max-pods': '200' }))), /goes down only/);
  const argsOnly: InPlaceCapability = { worker: ['kubeletExtraArgs'], controlPlane: [] };
  assert.match(
    why(workerInPlace(argsOnly, spec, from, to('v1.36.3', { 'max-pods': '200' }))),
    /does not change a worker's version/,
  );
});

/** The owner's record of running machine w-1, just asked to move in place to `set` at `version`. */
const askedRecord = (set: string, version: string) => ({
  ...newRecord('w-1', set, version, '2026-01-01T00:00:00.000Z'),
  phase: MachinePhase.Running,
  sequence: 3,
  updating: true as const,
});

/** A report of running machine w-1. */
const runningReport = (sequence: number, extra: object) => ({
  name: 'w-1',
  phase: MachinePhase.Running,
  marked: false,
  sequence,
  ...extra,
});

test('a report from before the machine took a request for the same version does not end its update', () => {
  const asked = askedRecord('new-set', 'v1.35.4');
  const report = (sequence: number, templateHash: string) =>
    runningReport(sequence, { version: 'v1.35.4', templateHash });
  const now = '2026-01-01T00:01:00.000Z';
  const [stale] = recordMachineReports([asked], [report(4, 'old-set')], now);
  assert.equal(stale!.updating, true, 'the report names the set it was in before');
  const [done] = recordMachineReports([asked], [report(5, 'new-set')], now);
  assert.equal(done!.updating, undefined);
});

test('an owner counts a machine updating in place as neither running nor available until it reports the version', () => {
  const asked = askedRecord('new', 'v1.36.3');
  assert.equal(isRunning(asked), false);
  const report = runningReport;
  const now = '2026-01-01T00:01:00.000Z';
  // A report sent before the machine took the request, and one while it updates: still updating.
  for (const r of [report(4, {}), report(5, { version: 'v1.35.4', updating: true })]) {
    const [m] = recordMachineReports([asked], [r], now);
    assert.equal(m!.updating, true, JSON.stringify(r));
    assert.equal(m!.runningSince, undefined);
  }
  const [done] = recordMachineReports([asked], [report(6, { version: 'v1.36.3' })], now);
  assert.equal(done!.updating, undefined);
  assert.equal(done!.runningSince, now, 'minReadySeconds counts from the end of the update');
  assert.equal(isRunning(done!), true);
});
