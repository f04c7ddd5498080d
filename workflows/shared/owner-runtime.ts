import { getExternalWorkflowHandle, setCurrentDetails, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import { deleteOwnerSignal, childChangedSignal, ownerStatusQuery, scaleSignal, scaleUpdate } from '../../src/temporal/cluster-messages';
import { machineChangedSignal } from '../../src/temporal/machine-messages';
import { CaptCluster, CaptKind, CaptKubernetesVersion, CaptNamespace, CaptPhase, CaptProvider } from '../../src/temporal/search-attributes';
import { recordMachineStatus, type PoolMachine } from './machine-pool';
import type { ClusterFacts, OwnerStatus } from './owner-status';

/** The state every machine owner (control plane, MachineDeployment) keeps, whatever else it holds. */
export interface OwnerState {
  spec: { replicas: number };
  machines: PoolMachine[];
  deleting?: { clusterDeleting: boolean };
  step: string;
  /** How many status reports went to the cluster. */
  reports?: number;
}

export interface OwnerRuntime {
  refresh(): OwnerStatus;
  setStep(step: string): void;
  /** The last report, awaited so the cluster hears it before this run closes. */
  finish(): Promise<OwnerStatus>;
}

/**
 * What the control plane and MachineDeployment workflows share: their handlers (status query, machine
 * reports, scale, delete) and the one place their status is published (current details, search
 * attributes, and a sequenced report to the cluster when something changed).
 */
export function ownerRuntime(opts: {
  kind: OwnerStatus['kind'];
  facts: ClusterFacts;
  owner: string;
  state: OwnerState;
  status: () => OwnerStatus;
  validateReplicas: (replicas: number) => void;
}): OwnerRuntime {
  const { state, facts } = opts;
  let published = '';
  const report = (status: OwnerStatus) => {
    state.reports = (state.reports ?? 0) + 1;
    return { ...status, sequence: state.reports };
  };
  const refresh = () => {
    const status = opts.status();
    setCurrentDetails(`**${status.readyReplicas}/${status.replicas} machines running** (${status.version}): ${state.step}`);
    const key = JSON.stringify([status.readyReplicas, status.replicas, status.initialized, status.deleted, status.step, status.machines.map((m) => m.phase)]);
    if (key === published) return status;
    published = key;
    const sequenced = report(status);
    void getExternalWorkflowHandle(opts.owner).signal(childChangedSignal, sequenced).catch(() => undefined);
    upsertSearchAttributes([
      { key: CaptKind, value: opts.kind }, { key: CaptNamespace, value: facts.namespace }, { key: CaptCluster, value: facts.name },
      { key: CaptPhase, value: state.deleting ? 'Deleting' : status.readyReplicas === status.replicas ? 'Ready' : 'Scaling' },
      { key: CaptKubernetesVersion, value: status.version }, { key: CaptProvider, value: facts.provider },
    ]);
    return sequenced;
  };
  const setStep = (step: string) => {
    state.step = step;
    refresh();
  };
  const scale = (replicas: number) => {
    state.spec.replicas = replicas;
    return refresh();
  };
  setHandler(ownerStatusQuery, () => opts.status());
  setHandler(machineChangedSignal, (status) => {
    state.machines = recordMachineStatus(state.machines, status);
    refresh();
  });
  setHandler(scaleUpdate, scale, { validator: opts.validateReplicas });
  setHandler(scaleSignal, (replicas) => void scale(replicas));
  setHandler(deleteOwnerSignal, (request) => {
    state.deleting ??= request;
    refresh();
  });
  return {
    refresh,
    setStep,
    finish: async () => {
      state.step = 'deleted';
      const final = report(opts.status());
      await getExternalWorkflowHandle(opts.owner).signal(childChangedSignal, final).catch(() => undefined);
      return final;
    },
  };
}
