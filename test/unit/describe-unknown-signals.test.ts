import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeTree } from '../../src/cli/render';
import type { ClusterView } from '../../src/contract/cluster';
import type { MachineStatus } from '../../src/contract/machine';
import type { OwnerStatus } from '../../src/contract/owner';

const at = '2026-11-23T01:00:00.000Z';
const signal = (name: string, count: number) => ({ name, count, firstAt: at, lastAt: at });

test('capt describe cluster lists the signals a workflow had no handler for, by object; none, no section', () => {
  const md = {
    kind: 'MachineDeployment',
    name: 'web',
    readyReplicas: 0,
    replicas: 0,
    version: 'v1.36.3',
    conditions: [],
    step: 'stable',
    rolloutComplete: true,
    ready: true,
    machines: [],
    unknownSignals: [signal('scaleRequestedV2', 3)],
  } as unknown as OwnerStatus;
  const cluster = {
    name: 'c1',
    phase: 'Provisioned',
    pending: [],
    conditions: [],
    createdAt: at,
    step: 'reconciled',
    machineDeployments: [md],
    machines: [],
    recoveries: [],
    unknownSignals: [signal('childChangedV2', 1)],
  } as unknown as ClusterView;
  const machine = { name: 'web-1', unknownSignals: [signal('nodeHealthV2', 2)] } as unknown as MachineStatus;
  const text = describeTree(cluster, false, [machine]);
  assert.match(
    text,
    /\nSignals without a handler \(ignored\):\n {2}Cluster\/c1: childChangedV2 \(1x, last 2026-11-23T01:00:00.000Z\)\n {2}MachineDeployment\/web: scaleRequestedV2 \(3x, last [^)]+\)\n {2}Machine\/web-1: nodeHealthV2 \(2x, last [^)]+\)$/,
  );
  assert.doesNotMatch(
    describeTree(
      { ...cluster, unknownSignals: undefined, machineDeployments: [{ ...md, unknownSignals: undefined }] },
      false,
    ),
    /Signals without a handler/,
  );
});
