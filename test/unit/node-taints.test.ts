import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nodeTaints } from '../../activities/machine/node-taints';
import type { MachineTaint } from '../../src/contract/machine';
import { mergeTemplateChange } from '../../workflows/machine/machine-change';
import { machineSetHash } from '../../workflows/machine-deployment/machine-sets';
import { pendingTemplateChange } from '../../workflows/shared/in-place-change';
import type { MachineTemplateModel } from '../../src/api/model';
import type { MachineSpec } from '../../src/contract/machine';

const dedicated: MachineTaint = {
  key: 'example.com/dedicated',
  value: 'gold',
  effect: 'NoSchedule',
  propagation: 'Always',
};
const warming: MachineTaint = { key: 'example.com/warming', effect: 'NoSchedule', propagation: 'OnInitialization' };
const uninitialized = { key: 'node.cluster.x-k8s.io/uninitialized', effect: 'NoSchedule' };
const others = { key: 'node.kubernetes.io/not-ready', effect: 'NoExecute' };
const keys = (r: { taints: { key: string; value?: string }[] }) => r.taints.map((t) => `${t.key}=${t.value ?? ''}`);

test("a joining Node gets every taint of its machine in the call that lifts the uninitialized one; others' stay", () => {
  const joined = nodeTaints([uninitialized, others], undefined, [dedicated, warming], true);
  assert.deepEqual(keys(joined), [
    'node.kubernetes.io/not-ready=',
    'example.com/dedicated=gold',
    'example.com/warming=',
  ]);
  assert.equal(joined.tracked, 'example.com/dedicated:NoSchedule', 'only Always taints are tracked');
});

test('later syncs keep Always taints as the machine has them and never bring an OnInitialization one back', () => {
  // The warming taint was removed from the Node by someone: a sync does not add it again.
  const synced = nodeTaints(
    [others, { key: dedicated.key, value: 'old', effect: 'NoSchedule' }],
    'example.com/dedicated:NoSchedule',
    [dedicated, warming],
    false,
  );
  assert.deepEqual(keys(synced), ['node.kubernetes.io/not-ready=', 'example.com/dedicated=gold']);
  // An Always taint the machine dropped leaves the Node; one nobody tracked stays.
  const dropped = nodeTaints(synced.taints, synced.tracked, [warming], false);
  assert.deepEqual(keys(dropped), ['node.kubernetes.io/not-ready=']);
  assert.equal(dropped.tracked, '');
  // Moved from Always to OnInitialization: it stays, no longer tracked, so a later drop leaves it be.
  const moved = nodeTaints(synced.taints, synced.tracked, [{ ...dedicated, propagation: 'OnInitialization' }], false);
  assert.deepEqual(keys(moved), ['node.kubernetes.io/not-ready=', 'example.com/dedicated=gold']);
  assert.equal(moved.tracked, '');
  assert.deepEqual(keys(nodeTaints(moved.taints, moved.tracked, [], false)), keys(moved));
});

test('a template whose taints change is an in-place change, no new MachineSet; the machine takes the template’s taints', () => {
  const template = { version: 'v1.36.3', labels: {}, annotations: {} } as unknown as MachineTemplateModel;
  const tainted = { ...template, taints: [dedicated] };
  assert.equal(machineSetHash(tainted), machineSetHash(template));
  const change = pendingTemplateChange(template, tainted, undefined);
  assert.deepEqual(change?.next.taints, [dedicated]);
  assert.equal(
    pendingTemplateChange(template, { ...template }, undefined),
    undefined,
    'no taints either side: no change',
  );
  const spec = { labels: {}, annotations: {}, taints: [dedicated] } as unknown as MachineSpec;
  assert.deepEqual(mergeTemplateChange(spec, pendingTemplateChange(tainted, template, undefined)!).taints, []);
});
