import { MachinePhase } from '../../src/contract/machine';
import type { ClusterFacts, OwnerStatus } from '../../src/contract/owner';
import { repaveField } from '../shared/repave';
import { maintenanceField } from '../shared/maintenance-hold';
import { isAvailable, isRunning } from '../shared/machine-pool';
import { healthCheckStatus, remediationAllowedCondition } from '../shared/machine-health';
import type { MachineDeploymentState } from './machine-deployment-workflow';
import { machineTemplateHash } from './machine-sets';
import { unknownSignalsField } from '../shared/unknown-signals';

/** The one place a MachineDeployment's status is computed (at `nowMs`, for minReadySeconds). */
export function machineDeploymentStatus(
  facts: ClusterFacts,
  state: MachineDeploymentState,
  nowMs: number,
): OwnerStatus {
  const set = state.machineSets.at(-1)!;
  const live = state.machines.filter((m) => !m.deleting);
  const ready = live.filter(isRunning).length;
  const available = live.filter((m) => isAvailable(m, state.spec.minReadySeconds, nowMs)).length;
  const updated = live.filter((m) => m.templateHash === set.hash).length;
  const complete =
    updated === state.spec.replicas &&
    live.length === state.spec.replicas &&
    available === state.spec.replicas &&
    state.machines.length === live.length;
  const availableOk = available >= state.spec.replicas;
  const health =
    state.spec.healthCheck && healthCheckStatus(state.spec.healthCheck, state.machines, state.remediations, nowMs);
  return {
    kind: 'MachineDeployment',
    namespace: facts.namespace,
    name: state.spec.name,
    cluster: facts.name,
    version: state.spec.template.version,
    replicas: state.spec.replicas,
    readyReplicas: ready,
    availableReplicas: available,
    updatedReplicas: updated,
    paused: !!state.paused,
    rolloutComplete: complete,
    observedGeneration: state.observedGeneration ?? 1,
    revision: set.revision,
    templateHash: machineTemplateHash(state.spec.template),
    ...(set.restartedAt ? { restartedAt: set.restartedAt } : {}),
    initialized: true,
    ready: ready === state.spec.replicas && state.machines.length === state.spec.replicas,
    available: availableOk,
    failedMachines: state.machines.filter((m) => m.phase === MachinePhase.Failed).length,
    deleted: !!state.deleting && state.machines.length === 0,
    step: state.step,
    stepReason: state.stepReason ?? 'Starting',
    conditions: [
      {
        type: 'Available',
        status: availableOk ? 'True' : 'False',
        ...(availableOk
          ? {}
          : {
              reason: 'WaitingForAvailableMachines',
              message: `${available}/${state.spec.replicas} machines available`,
            }),
      },
      {
        type: 'RollingOut',
        status: complete ? 'False' : 'True',
        ...(complete ? {} : { reason: state.paused ? 'Paused' : 'RollingOut', message: state.step }),
      },
      ...(health ? [remediationAllowedCondition(health)] : []),
    ],
    ...(health ? { healthCheck: health } : {}),
    ...repaveField(state.spec.machineMaxAgeSeconds, live),
    ...maintenanceField(state.spec.maintenanceWindow, state),
    machines: state.machines,
    machineSets: state.machineSets.map((s) => {
      const of = live.filter((m) => m.templateHash === s.hash);
      return {
        name: s.name,
        hash: s.hash,
        revision: s.revision,
        version: s.version,
        machines: of.length,
        ready: of.filter(isRunning).length,
      };
    }),
    sequence: state.reports ?? 0,
    ...(state.adoption ? { adoption: state.adoption } : {}),
    ...unknownSignalsField(state.unknownSignals),
  };
}
