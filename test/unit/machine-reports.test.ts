import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ReportCoalescer, reportsPerMessage, type ReportTarget } from '../../activities/machine/machine-reports';
import { MachinePhase, type MachineReport } from '../../src/contract/machine';

const report = (name: string): MachineReport => ({ name, phase: MachinePhase.Running, marked: false, sequence: 1 });

/** A send whose messages finish only when the test says so, recording what each carried and how it went. */
function heldSend() {
  const sent: { owner: string; names: string[]; finish: (err?: Error) => void }[] = [];
  const send = ({ owner, byUpdate }: ReportTarget, reports: MachineReport[]) =>
    new Promise<void>((resolve, reject) =>
      sent.push({
        owner: byUpdate ? `${owner} (update)` : owner,
        names: reports.map((r) => r.name),
        finish: (err) => (err ? reject(err) : resolve()),
      }),
    );
  /** What each message carried, in the order sent: [owner (and how), report names]. */
  const carried = () => sent.map((s) => [s.owner, s.names]);
  return { sent, send, carried };
}

const signal = (owner: string): ReportTarget => ({ owner, byUpdate: false });
const update = (owner: string): ReportTarget => ({ owner, byUpdate: true });

const settled = () => new Promise((r) => setImmediate(r));

test('reports to one owner made while its signal is in flight go together in the next signal', async () => {
  const { sent, send, carried } = heldSend();
  const c = new ReportCoalescer(send);
  const first = c.deliver(signal('md/a'), report('m1'));
  await settled();
  const rest = ['m2', 'm3', 'm4'].map((n) => c.deliver(signal('md/a'), report(n)));
  const other = c.deliver(signal('md/b'), report('x1'));
  await settled();
  assert.deepEqual(
    carried(),
    [
      ['md/a', ['m1']],
      ['md/b', ['x1']],
    ],
    'one signal in flight per owner; another owner is not held up',
  );
  sent[0]!.finish();
  await first;
  await settled();
  assert.deepEqual(carried()[2], ['md/a', ['m2', 'm3', 'm4']]);
  sent[2]!.finish();
  sent[1]!.finish();
  await Promise.all([...rest, other]);
});

test("a failed signal fails every report it carried, and the owner's next reports go in a new one", async () => {
  const { sent, send } = heldSend();
  const c = new ReportCoalescer(send);
  const a = c.deliver(signal('md/a'), report('m1'));
  await settled();
  sent[0]!.finish(new Error('owner busy'));
  await assert.rejects(a, /owner busy/);
  const b = c.deliver(signal('md/a'), report('m2'));
  await settled();
  assert.deepEqual(sent[1]!.names, ['m2']);
  sent[1]!.finish();
  await b;
});

test(`a message carries at most ${reportsPerMessage} reports`, async () => {
  const { sent, send } = heldSend();
  const c = new ReportCoalescer(send);
  const first = c.deliver(signal('md/a'), report('m0'));
  await settled();
  const many = Array.from({ length: reportsPerMessage + 5 }, (_, i) => c.deliver(signal('md/a'), report(`n${i}`)));
  sent[0]!.finish();
  await first;
  await settled();
  assert.equal(sent[1]!.names.length, reportsPerMessage);
  sent[1]!.finish();
  await settled();
  await settled();
  assert.equal(sent[2]!.names.length, 5);
  sent[2]!.finish();
  await Promise.all(many);
});

test("an owner's reports by update and by signal (machines of two builds) go in separate messages", async () => {
  const { sent, send, carried } = heldSend();
  const c = new ReportCoalescer(send);
  const byUpdate = [c.deliver(update('md/a'), report('new1')), c.deliver(update('md/a'), report('new2'))];
  const bySignal = c.deliver(signal('md/a'), report('old1'));
  await settled();
  assert.deepEqual(
    carried(),
    [
      ['md/a (update)', ['new1']],
      ['md/a', ['old1']],
    ],
    'each way has its own message in flight',
  );
  sent[0]!.finish();
  sent[1]!.finish();
  await settled();
  assert.deepEqual(carried()[2], ['md/a (update)', ['new2']]);
  sent[2]!.finish();
  await Promise.all([...byUpdate, bySignal]);
});
