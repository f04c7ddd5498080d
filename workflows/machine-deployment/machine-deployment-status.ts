import { MachinePhase } from '../../src/contract/machine';
import type { ClusterFacts, OwnerStatus } from '../../src/contract/owner';
import { repaveField } from '../shared/repave';
import { maintenanceField } from '../shared/maintenance-hold';
import { availability, isRunning } from '../shared/machine-pool';
import { healthCheckStatus, remediationAllowedCondition } from '../shared/machine-health';
import type { MachineDeploymentState } from './machine-deployment-workflow';
import { machineTemplateHash } from './machine-sets';
import { unknownSignalsField } from '../shared/unknown-signals';

/**
 * The counts the status is made of, in one pass over the records: the status is computed at every report a
 * MachineDeployment takes, over up to 5,000 records, and a replay of its history computes it again each time
 * (a pass per count and per MachineSet took half of a 5,000-worker owner's replay).
 */
function countMachines(state: MachineDeploymentState, nowMs: number) {
  const live: MachineDeploymentState['machines'] = [];
  const bySet = new Map<string, { machines: number; ready: number }>();
  let ready = 0;
  let available = 0;
  let failed = 0;
  // Machines an operator asked to replace and still there: the rollout is not complete until they are gone.
  let replacing = 0;
  const asked = state.replace?.length ? new Set(state.replace) : undefined;
  const isAvailable = availability(state.spec.minReadySeconds, nowMs);
  for (const m of state.machines) {
    if (m.phase === MachinePhase.Failed) failed++;
    if (m.deleting) continue;
    live.push(m);
    if (asked?.has(m.name)) replacing++;
    const running = isRunning(m);
    let of = bySet.get(m.templateHash);
    if (!of) bySet.set(m.templateHash, (of = { machines: 0, ready: 0 }));
    of.machines++;
    if (!running) continue;
    of.ready++;
    ready++;
    if (isAvailable(m)) available++;
  }
  return { live, ready, available, failed, bySet, replacing };
}

/** The one place a MachineDeployment's status is computed (at `nowMs`, for minReadySeconds). */
export function machineDeploymentStatus(
  facts: ClusterFacts,
  state: MachineDeploymentState,
  nowMs: number,
): OwnerStatus {
  const set = state.machineSets.at(-1)!;
  const { live, ready, available, failed, bySet, replacing } = countMachines(state, nowMs);
  const updated = bySet.get(set.hash)?.machines ?? 0;
  const complete =
    updated === state.spec.replicas &&
    live.length === state.spec.replicas &&
    available === state.spec.replicas &&
    state.machines.length === live.length &&
    replacing === 0;
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
    failedMachines: failed,
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
    ...(facts.inPlace ? { inPlace: facts.inPlace } : {}),
    ...maintenanceField(state.spec.maintenanceWindow, state),
    machines: state.machines,
    machineSets: state.machineSets.map((s) => ({
      name: s.name,
      hash: s.hash,
      revision: s.revision,
      version: s.version,
      machines: bySet.get(s.hash)?.machines ?? 0,
      ready: bySet.get(s.hash)?.ready ?? 0,
    })),
    sequence: state.reports ?? 0,
    ...(state.adoption ? { adoption: state.adoption } : {}),
    ...unknownSignalsField(state.unknownSignals),
  };
}
