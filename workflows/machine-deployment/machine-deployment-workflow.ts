import { allHandlersFinished, ApplicationFailure, condition, continueAsNew, workflowInfo } from '@temporalio/workflow';
import type { MachineDeploymentModel } from '../../src/api/model';
import type { MachineSpec } from '../machine/machine-model';
import { deletePoolMachine, isRunning, newMachineName, startPoolMachine, type PoolMachine } from '../shared/machine-pool';
import { ownerRuntime } from '../shared/owner-runtime';
import type { ClusterFacts, OwnerStatus } from '../shared/owner-status';

export interface MachineDeploymentInput {
  cluster: ClusterFacts;
  spec: MachineDeploymentModel;
  owner: string;
  state?: MachineDeploymentState;
}

export interface MachineDeploymentState {
  spec: MachineDeploymentModel;
  machines: PoolMachine[];
  deleting?: { clusterDeleting: boolean };
  step: string;
  reports?: number;
}

export function validateMachineDeploymentReplicas(name: string, replicas: number): void {
  if (!Number.isInteger(replicas) || replicas < 0) {
    throw ApplicationFailure.create({ message: `MachineDeployment ${name}: replicas must be a whole number >= 0, got ${replicas}`, type: 'InvalidSpec', nonRetryable: true });
  }
}

export function machineDeploymentStatus(facts: ClusterFacts, state: MachineDeploymentState): OwnerStatus {
  const ready = state.machines.filter(isRunning).length;
  const complete = ready === state.spec.replicas && state.machines.length === state.spec.replicas;
  return {
    kind: 'MachineDeployment', namespace: facts.namespace, name: state.spec.name, version: state.spec.template.version, replicas: state.spec.replicas,
    readyReplicas: ready, updatedReplicas: ready, revision: 1, templateHash: '', initialized: true, deleted: !!state.deleting && state.machines.length === 0, step: state.step,
    conditions: [{ type: 'Available', status: complete ? 'True' : 'False', ...(complete ? {} : { reason: 'Scaling', message: `${ready}/${state.spec.replicas} machines running` }) }],
    machines: state.machines.flatMap((m) => (m.status ? [m.status] : [])),
    sequence: state.reports ?? 0,
  };
}

/** Which machine goes first when scaling down: marked ones, then by the deletion order. */
export function scaleDownVictim(machines: PoolMachine[], order: MachineDeploymentModel['strategy']['deletionOrder']): PoolMachine {
  const candidates = machines.filter((m) => !m.deleting);
  const marked = candidates.find((m) => m.status?.annotations['cluster.x-k8s.io/delete-machine'] !== undefined);
  if (marked) return marked;
  const unhealthy = candidates.find((m) => !isRunning(m));
  if (unhealthy && order === 'Random') return unhealthy;
  const byAge = [...candidates].sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.name.localeCompare(b.name));
  return order === 'Newest' ? byAge.at(-1)! : byAge[0]!;
}

/**
 * A MachineDeployment (workflow ID `md/<namespace>/<name>`): keeps `replicas` machines of its template,
 * creating and deleting them one at a time.
 */
export async function machineDeploymentWorkflow(input: MachineDeploymentInput): Promise<OwnerStatus> {
  const facts = input.cluster;
  const state: MachineDeploymentState = input.state ?? { spec: input.spec, machines: [], step: 'starting' };
  const self = workflowInfo().workflowId;

  const { refresh, setStep, finish } = ownerRuntime({
    kind: 'MachineDeployment', facts, owner: input.owner, state, status: () => machineDeploymentStatus(facts, state),
    validateReplicas: (replicas) => validateMachineDeploymentReplicas(state.spec.name, replicas),
  });

  const t = state.spec.template;
  const machineSpec = (name: string): MachineSpec => ({
    namespace: facts.namespace, name, cluster: facts.name, provider: facts.provider, role: 'worker', version: t.version,
    bootstrap: { role: 'join', config: t.bootstrap.config, controlPlaneEndpoint: facts.endpoint },
    infrastructure: { kind: t.infrastructure.kind, spec: t.infrastructure.spec }, failureDomain: t.failureDomain,
    labels: { ...t.labels, 'cluster.x-k8s.io/deployment-name': state.spec.name, 'cluster.x-k8s.io/cluster-name': facts.name }, annotations: t.annotations,
    nodeDrainTimeoutSeconds: t.nodeDrainTimeoutSeconds, nodeVolumeDetachTimeoutSeconds: t.nodeVolumeDetachTimeoutSeconds, nodeDeletionTimeoutSeconds: t.nodeDeletionTimeoutSeconds,
    owner: self,
  });

  refresh();
  while (!state.deleting) {
    const live = state.machines.filter((m) => !m.deleting);
    if (live.length < state.spec.replicas) {
      const name = newMachineName(state.spec.name);
      state.machines.push({ name, createdAt: new Date().toISOString(), templateHash: t.version, deleting: false });
      setStep(`creating machine ${name} (${live.length + 1}/${state.spec.replicas})`);
      await startPoolMachine(machineSpec(name), `Machine ${name} of MachineDeployment ${state.spec.name}, cluster ${facts.name}`);
    } else if (live.length > state.spec.replicas) {
      const victim = scaleDownVictim(state.machines, state.spec.strategy.deletionOrder);
      victim.deleting = true;
      setStep(`deleting machine ${victim.name} (scaling to ${state.spec.replicas})`);
      await deletePoolMachine(facts.namespace, victim.name, false);
    } else {
      const allRunning = live.every(isRunning);
      setStep(allRunning ? `${live.length} machines running` : `waiting for ${live.filter((m) => !isRunning(m)).map((m) => m.name).join(', ')} to run`);
      const current = () => state.machines.filter((m) => !m.deleting);
      await condition(() => !!state.deleting || current().length !== state.spec.replicas || current().every(isRunning) !== allRunning || workflowInfo().continueAsNewSuggested);
      if (workflowInfo().continueAsNewSuggested && !state.deleting) {
        await condition(allHandlersFinished);
        return continueAsNew<typeof machineDeploymentWorkflow>({ ...input, state });
      }
    }
  }
  setStep('deleting every machine');
  for (const m of state.machines) {
    m.deleting = true;
    await deletePoolMachine(facts.namespace, m.name, state.deleting.clusterDeleting);
  }
  await condition(() => state.machines.length === 0);
  return finish();
}
