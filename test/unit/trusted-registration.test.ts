import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeletRegistration, LocalMachineRecord } from '../../providers/local/layout';
import { trustedRegistration } from '../../providers/local/kubelet/trusted-registration';

const record = {
  name: 'w-1',
  providerID: 'local://default/c/w-1',
  ip: '127.1.0.9',
  version: 'v1.36.3',
} as LocalMachineRecord;

test("a machine's kubelet registration gives its labels and taints; its identity comes from the host's record", () => {
  const claimed: KubeletRegistration = {
    nodeName: 'w-1',
    providerID: 'local://default/c/cp-1',
    kubeletVersion: 'v9.9.9',
    ip: '127.0.0.1',
    labels: { pool: 'a' },
    taints: [{ key: 'k', effect: 'NoSchedule' }],
  };
  assert.deepEqual(trustedRegistration(record, claimed, ['w-1', 'cp-1']), {
    nodeName: 'w-1',
    providerID: 'local://default/c/w-1',
    kubeletVersion: 'v1.36.3',
    ip: '127.1.0.9',
    labels: { pool: 'a' },
    taints: [{ key: 'k', effect: 'NoSchedule' }],
  });
});

test("a Node name of another machine of the cluster, or no DNS name, gives way to the machine's own; a name of its own stays", () => {
  const as = (nodeName: string) =>
    trustedRegistration(
      record,
      { ...record, nodeName, providerID: '', kubeletVersion: '', labels: {}, taints: [] } as KubeletRegistration,
      ['w-1', 'cp-1'],
    )!.nodeName;
  assert.equal(as('cp-1'), 'w-1', 'it may not heartbeat, and keep Ready, the Node of cp-1');
  assert.equal(as('../x'), 'w-1');
  assert.equal(as('worker-one.example'), 'worker-one.example', "kubeadm's nodeRegistration.name of a single machine");
  assert.equal(trustedRegistration(record, undefined, []), undefined, 'nothing registered yet');
});

test("max-pods: the machine's own when sane, the host's record once an in-place update gave the kubelet arguments", () => {
  const claimed = (maxPods: unknown) =>
    ({ nodeName: 'w-1', labels: {}, taints: [], maxPods }) as unknown as KubeletRegistration;
  assert.equal(trustedRegistration(record, claimed(200), [])!.maxPods, 200);
  for (const bad of [0, -1, 2.5, 10_001, 'many', undefined])
    assert.equal(trustedRegistration(record, claimed(bad), [])!.maxPods, undefined, `${String(bad)}: the default`);
  const updated = { ...record, kubeletExtraArgs: { 'max-pods': '300' } };
  assert.equal(trustedRegistration(updated, claimed(200), [])!.maxPods, 300);
  assert.equal(
    trustedRegistration({ ...record, kubeletExtraArgs: {} }, claimed(200), [])!.maxPods,
    undefined,
    'arguments given in place without max-pods: the default, as a restarted kubelet would',
  );
});
