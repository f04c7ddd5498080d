import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { MachineState } from '../../workflows/machine/machine-model';
import { machineStatus } from '../../workflows/machine/machine-status';
import { workerSpec } from '../fixtures/worker-spec';

const pending: MachineState = {
  spec: { ...workerSpec('ph', 'ph-md-0-abc12'), provisionInOneActivity: true, bootstrapInProvisioning: true },
  createdAt: '2026-11-28T12:00:00Z',
  bootstrapDataReady: false,
  nodeSynced: false,
  nodeSyncPending: false,
  step: 'starting',
};

const bootstrapReady = (state: MachineState) =>
  machineStatus(state).conditions.find((c) => c.type === 'BootstrapConfigReady')?.status;

test('a machine whose provisioning call renders its bootstrap data: Provisioning while it runs, BootstrapConfigReady only once it returned', () => {
  assert.equal(machineStatus(pending).phase, 'Pending');
  const provisioning: MachineState = { ...pending, provisioning: true };
  assert.equal(machineStatus(provisioning).phase, 'Provisioning');
  assert.equal(bootstrapReady(provisioning), 'False', 'not rendered yet as far as the machine knows');
  const provisioned: MachineState = {
    ...pending,
    provisioning: false,
    bootstrapDataReady: true,
    infrastructure: { providerID: 'local://default/ph/ph-md-0-abc12', addresses: ['127.0.10.3'] },
    bootstrap: { state: 'succeeded' },
  };
  assert.equal(machineStatus(provisioned).phase, 'Provisioned');
  assert.equal(bootstrapReady(provisioned), 'True');
});
