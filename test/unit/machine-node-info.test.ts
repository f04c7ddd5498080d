import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nodeSystemInfo } from '../../activities/machine/node-system-info';
import { machineObjectStatus } from '../../src/bridge/machine-objects';
import {
  DeletionGate,
  machineConditionTypes,
  nodeInfoMaxLength,
  type NodeSystemInfo,
} from '../../src/contract/machine';
import type { MachineState } from '../../workflows/machine/machine-model';
import { machineStatus } from '../../workflows/machine/machine-status';
import { workerSpec } from '../fixtures/worker-spec';

/** A Node's status.nodeInfo as the local provider's simulated kubelet writes it. */
const simulated = {
  kubeletVersion: 'v1.35.4',
  kubeProxyVersion: 'v1.35.4',
  containerRuntimeVersion: 'capt-simulated://1.0',
  operatingSystem: 'linux',
  architecture: 'amd64',
  osImage: 'capt local machine',
  kernelVersion: 'simulated',
  machineID: 'kb-md-0-abc12',
  systemUUID: 'kb-md-0-abc12',
  bootID: 'kb-md-0-abc12',
};

const runningState = (nodeInfo?: NodeSystemInfo): MachineState => ({
  spec: workerSpec('kb', 'kb-md-0-abc12'),
  createdAt: '2026-11-22T12:00:00Z',
  bootstrapDataReady: true,
  infrastructure: { providerID: 'local://kb-md-0-abc12', addresses: ['127.0.10.3'] },
  bootstrap: { state: 'succeeded' },
  nodeRef: { name: 'kb-md-0-abc12' },
  node: { ready: 'True' },
  ...(nodeInfo ? { nodeInfo } : {}),
  nodeSynced: true,
  nodeSyncPending: false,
  step: 'running',
});

test("a Node's nodeInfo is kept whole: Cluster API's ten strings, swap's capacity when reported", () => {
  assert.deepEqual(nodeSystemInfo(simulated), simulated);
  assert.deepEqual(nodeSystemInfo({ ...simulated, swap: { capacity: 2 ** 31 } }), {
    ...simulated,
    swap: { capacity: 2 ** 31 },
  });
  // A swap status without a capacity says nothing.
  assert.deepEqual(nodeSystemInfo({ ...simulated, swap: {} }), simulated);
  assert.equal(nodeSystemInfo(undefined), undefined);
});

test("a kubelet's nodeInfo is bounded: each string cut, a missing one empty (Cluster API's schema requires all ten)", () => {
  const written = { ...simulated, osImage: 'x'.repeat(10_000) } as Partial<typeof simulated>;
  delete written.bootID;
  const kept = nodeSystemInfo(written as typeof simulated)!;
  assert.equal(kept.osImage, 'x'.repeat(nodeInfoMaxLength));
  assert.equal(kept.bootID, '');
  assert.deepEqual(Object.keys(kept).sort(), Object.keys(simulated).sort());
});

test("a machine's status carries its Node's nodeInfo, and the bridge writes it on the Machine as Cluster API does", () => {
  const status = machineStatus(runningState(simulated));
  assert.deepEqual(status.nodeInfo, simulated);
  const written = machineObjectStatus(status, true, undefined, '2026-11-22T12:01:00Z');
  assert.deepEqual(written.nodeInfo, simulated);
  assert.deepEqual(written.nodeRef, { name: 'kb-md-0-abc12' });
});

test('a machine that became Running before nodeInfo was kept shows none, and its object gets no nodeInfo', () => {
  // Through JSON, as a query answer reaches the bridge.
  const status = JSON.parse(JSON.stringify(machineStatus(runningState()))) as ReturnType<typeof machineStatus>;
  assert.equal('nodeInfo' in status, false);
  assert.equal('nodeInfo' in machineObjectStatus(status, true, undefined, '2026-11-22T12:01:00Z'), false);
});

test("a Machine's NodeReady is Cluster API's: Unknown without a Node, the Node's Ready once it has one, False once it is deleted; every condition written is one capt lists as its own", () => {
  const nodeReady = (state: MachineState) => {
    const { status, reason } = machineStatus(state).conditions.find((c) => c.type === 'NodeReady')!;
    return [status, reason];
  };
  const { nodeRef: _n, node: _h, ...waiting } = { ...runningState(), nodeSynced: false };
  assert.deepEqual(nodeReady(waiting), ['Unknown', 'WaitingForNode']);
  assert.deepEqual(nodeReady(runningState()), ['True', undefined]);
  assert.deepEqual(nodeReady({ ...runningState(), node: { ready: 'Unknown' } }), ['Unknown', 'NodeNotReady']);
  assert.deepEqual(nodeReady({ ...runningState(), node: { ready: 'False' } }), ['False', 'NodeNotReady']);
  assert.deepEqual(nodeReady({ ...runningState(), node: { ready: 'True', gone: true } }), ['False', 'NodeNotFound']);

  const deleting: MachineState = {
    ...runningState(),
    deletion: {
      requestedAt: '2026-11-22T12:05:00Z',
      clusterDeleting: false,
      gate: DeletionGate.Drain,
      gateStartedAt: '2026-11-22T12:05:00Z',
    },
  };
  const written = machineObjectStatus(machineStatus(deleting), false, undefined, '2026-11-22T12:06:00Z');
  const types = [...machineStatus(waiting).conditions, ...written.conditions].map((c) => c.type);
  assert.deepEqual(
    types.filter((t) => !(machineConditionTypes as readonly string[]).includes(t)),
    [],
    'machineConditionTypes (what a MachineHealthCheck refusal lists) names every condition capt sets',
  );
});
