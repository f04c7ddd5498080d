import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadManifests } from '../../src/api/load-manifests';
import { substituteVariables } from '../../src/api/variables';
import type { OwnerSummary } from '../../src/contract/owner';
import { clusterStatus, ownerKey, type ClusterState } from '../../workflows/cluster/cluster-status';

const { text } = substituteVariables(readFileSync(join(__dirname, '../../../examples/quickstart.yaml'), 'utf8'), {
  CLUSTER_NAME: 'st',
  CONTROL_PLANE_MACHINE_COUNT: '1',
  WORKER_MACHINE_COUNT: '2',
});
const [model] = loadManifests([{ file: 'quickstart.yaml', text }], {});

const summary = (kind: OwnerSummary['kind'], name: string, fields: Partial<OwnerSummary>): OwnerSummary => ({
  kind,
  namespace: 'default',
  name,
  version: model!.controlPlane.version,
  revision: 1,
  templateHash: 'h',
  replicas: 2,
  initialized: true,
  ready: true,
  available: true,
  failedMachines: 0,
  deleted: false,
  rolloutComplete: true,
  observedGeneration: 1,
  sequence: 1,
  ...fields,
});

/** A provisioned cluster whose only MachineDeployment has the given summary fields. */
function state(workers: Partial<OwnerSummary>, workersByAvailability?: boolean): ClusterState {
  const m = model!;
  const md = m.machineDeployments[0]!;
  return {
    facts: {
      namespace: 'default',
      name: 'st',
      provider: 'local',
      endpoint: '127.1.0.1:6443',
      serviceSubnet: '',
      podSubnet: '',
      serviceDomain: '',
    },
    model: m,
    infrastructureReady: true,
    children: {
      [ownerKey('KubeadmControlPlane', m.controlPlane.name)]: summary('KubeadmControlPlane', m.controlPlane.name, {}),
      [ownerKey('MachineDeployment', md.name)]: summary('MachineDeployment', md.name, workers),
    },
    workersStarted: true,
    deleting: false,
    deleted: false,
    createdAt: '2026-11-25T00:00:00Z',
    step: 'running',
    ...(workersByAvailability ? { workersByAvailability } : {}),
  };
}

const condition = (s: ClusterState, type: string) => clusterStatus(s).conditions.find((c) => c.type === type);

test('mid-rollout with a surge machine, a MachineDeployment still Available keeps WorkersAvailable, Available and the phase', () => {
  const surging = state({ ready: false, rolloutComplete: false, available: true }, true);
  assert.deepEqual(condition(surging, 'WorkersAvailable'), { type: 'WorkersAvailable', status: 'True' });
  assert.equal(condition(surging, 'Available')?.status, 'True');
  assert.equal(clusterStatus(surging).phase, 'Provisioned');
  // The rollout itself shows as a pending change, not as unavailable workers.
  assert.deepEqual(
    clusterStatus(surging).pending.map((p) => p.reason),
    ['RollingOut'],
  );
});

test('a MachineDeployment that is not Available makes WorkersAvailable False, naming it', () => {
  const short = state({ ready: false, available: false }, true);
  const c = condition(short, 'WorkersAvailable');
  assert.equal(c?.status, 'False');
  assert.match(c?.message ?? '', /MachineDeployment st-md-0 is not available \(see workflow md\/default\/st-md-0\)/);
  assert.equal(clusterStatus(short).phase, 'Provisioning');
});

test('a run from before the change (no workersByAvailability) keeps its old reading, so its history replays', () => {
  assert.equal(condition(state({ ready: false, available: true }), 'WorkersAvailable')?.status, 'False');
});
