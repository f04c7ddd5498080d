import {
  allHandlersFinished, ApplicationFailure, condition, continueAsNew, getExternalWorkflowHandle, ParentClosePolicy, proxyActivities, setCurrentDetails,
  setHandler, startChild, upsertSearchAttributes, workflowInfo,
} from '@temporalio/workflow';
import type { ClusterStatus, RunningTemplates } from '../../src/contract/cluster';
import { controlPlaneWorkflowId as kcpWorkflowId, machineDeploymentWorkflowId as mdWorkflowId } from '../../src/contract/workflow-ids';
import type * as coreActivities from '../../activities';
import type { ProviderActivities } from '../../providers/provider-activities';
import type { ClusterModel } from '../../src/api/model';
import {
  appliedModelQuery, applyClusterUpdate, childChangedSignal, clusterStatusQuery, controlPlaneSpecSignal, deleteClusterUpdate, deleteOwnerSignal, machineDeploymentSpecSignal, scaleSignal,
} from '../../src/contract/cluster-messages';
import { captAttributes } from '../../src/contract/search-attributes';
import { providerTaskQueue } from '../../src/contract/task-queues';
import { controlPlaneWorkflow } from '../control-plane/control-plane-workflow';
import { validateVersionChange } from '../control-plane/version-policy';
import { machineCertificateDays } from '../control-plane/certificate-rotation';
import { machineDeploymentWorkflow, validateMachineDeploymentReplicas } from '../machine-deployment/machine-deployment-workflow';
import { resolveIntOrPercent } from '../../src/api/int-or-percent';
import { diffClusterModels } from './cluster-diff';
import { clusterStatus, type ClusterState } from './cluster-status';

export interface ClusterInput {
  model: ClusterModel;
  state?: ClusterState;
}

/** What `capt apply` may change on an existing cluster today; the rest is refused with the reason. */
export function validateClusterChange(current: ClusterModel, next: ClusterModel, runningVersion = current.controlPlane.version): void {
  const refuse = (message: string) => {
    throw ApplicationFailure.create({ message: `Cluster ${current.namespace}/${current.name}: ${message}`, type: 'InvalidSpec', nonRetryable: true });
  };
  if (next.provider !== current.provider) refuse(`the provider cannot change (${current.provider} -> ${next.provider})`);
  if (next.controlPlane.name !== current.controlPlane.name) refuse(`the control plane cannot be replaced (${current.controlPlane.name} -> ${next.controlPlane.name})`);
  // kubeadm fixes the cluster's networks at init: a change would reach new machines only, splitting the cluster.
  for (const field of ['serviceSubnet', 'podSubnet', 'serviceDomain'] as const) {
    if (current[field] !== undefined && next[field] !== current[field]) refuse(`clusterNetwork cannot change on a running cluster (${field} ${current[field]} -> ${next[field]}); create a new cluster instead`);
  }
  validateVersionChange(runningVersion, next.controlPlane.version);
  const days = next.controlPlane.certificatesExpiryDays;
  if (days !== undefined && days >= machineCertificateDays) refuse(`certificatesExpiryDays ${days} is not less than the ${machineCertificateDays}-day validity of machine certificates; every new machine would be replaced at once`);
  if (next.controlPlane.replicas % 2 === 0) refuse(`${next.controlPlane.replicas} control-plane replicas cannot keep etcd quorum; use an odd count`);
  const minor = (v: string) => Number(v.split('.')[1]);
  for (const md of next.machineDeployments) {
    if (minor(md.template.version) > minor(next.controlPlane.version)) refuse(`MachineDeployment ${md.name}: workers at ${md.template.version} would be newer than the control plane at ${next.controlPlane.version}; upgrade the control plane first`);
    validateMachineDeploymentReplicas(md.name, md.replicas);
    const { maxSurge, maxUnavailable } = md.strategy;
    if (md.strategy.type === 'RollingUpdate' && resolveIntOrPercent(maxSurge, md.replicas, true) === 0 && resolveIntOrPercent(maxUnavailable, md.replicas, false) === 0) {
      refuse(`MachineDeployment ${md.name}: maxSurge and maxUnavailable are both 0, so a rollout could never progress; set either to at least 1`);
    }
  }
}

/**
 * A Cluster (workflow ID `cluster/<namespace>/<name>`): cluster infrastructure and PKI, then the control
 * plane, then the MachineDeployments once the control plane is initialised. Deletion runs the other way.
 */
export async function clusterWorkflow(input: ClusterInput): Promise<ClusterStatus> {
  const model = input.model;
  const state: ClusterState = input.state ?? {
    facts: { namespace: model.namespace, name: model.name, provider: model.provider, endpoint: '', serviceSubnet: model.serviceSubnet, podSubnet: model.podSubnet, serviceDomain: model.serviceDomain },
    model, infrastructureReady: false, children: {}, workersStarted: false, deleting: false, deleted: false, createdAt: new Date().toISOString(), step: 'starting',
  };
  const { facts } = state;
  const core = proxyActivities<typeof coreActivities>({ startToCloseTimeout: '2m', retry: { initialInterval: '1s', maximumInterval: '30s' } });
  const provider = proxyActivities<ProviderActivities>({ taskQueue: providerTaskQueue(facts.provider), startToCloseTimeout: '5m', heartbeatTimeout: '20s', retry: { initialInterval: '1s', maximumInterval: '30s' } });
  const self = workflowInfo().workflowId;

  let publishedPhase = '';
  const refresh = () => {
    const status = clusterStatus(state);
    const blocked = status.conditions.find((c) => c.status !== 'True' && c.type !== 'Available');
    setCurrentDetails(`**${status.phase}**: ${state.step}${blocked?.message ? `\n\n${blocked.type}: ${blocked.message}` : ''}`);
    if (status.phase !== publishedPhase) {
      publishedPhase = status.phase;
      upsertSearchAttributes(captAttributes({
        kind: 'Cluster', namespace: facts.namespace, cluster: facts.name, phase: status.phase, version: state.model.controlPlane.version, provider: facts.provider,
      }));
    }
    return status;
  };
  const setStep = (step: string) => {
    state.step = step;
    refresh();
  };

  setHandler(clusterStatusQuery, () => clusterStatus(state));
  setHandler(childChangedSignal, (status) => {
    const key = `${status.kind}/${status.name}`;
    if ((state.children[key]?.sequence ?? -1) > status.sequence) return;
    state.children[key] = status;
    refresh();
  });
  setHandler(deleteClusterUpdate, () => {
    state.deleting = true;
    return refresh();
  });

  const startMachineDeployment = async (name: string) => {
    const spec = state.model.machineDeployments.find((m) => m.name === name)!;
    await startChild(machineDeploymentWorkflow, {
      workflowId: mdWorkflowId(facts.namespace, name), args: [{ cluster: facts, spec, owner: self }], parentClosePolicy: ParentClosePolicy.ABANDON,
      staticSummary: `MachineDeployment ${facts.namespace}/${name} of cluster ${facts.name}`,
    });
  };
  const pendingStarts: string[] = [];
  const runningTemplates = (model: ClusterModel): RunningTemplates => ({
    controlPlane: state.children[`KubeadmControlPlane/${model.controlPlane.name}`]?.templateHash,
    machineDeployments: Object.fromEntries(model.machineDeployments.map((m) => [m.name, state.children[`MachineDeployment/${m.name}`]?.templateHash])),
  });
  setHandler(appliedModelQuery, () => ({ model: state.model, running: runningTemplates(state.model) }));
  setHandler(
    applyClusterUpdate,
    async (next) => {
      const previous = state.model;
      const diff = diffClusterModels(previous, next, runningTemplates(previous));
      state.model = next;
      const kcp = getExternalWorkflowHandle(kcpWorkflowId(facts.namespace, next.controlPlane.name));
      if (diff.controlPlane.spec) await kcp.signal(controlPlaneSpecSignal, { spec: next.controlPlane, cause: 'capt apply' });
      if (diff.controlPlane.scale) await kcp.signal(scaleSignal, next.controlPlane.replicas);
      for (const change of diff.machineDeployments) {
        const md = next.machineDeployments.find((m) => m.name === change.name)!;
        if (change.outcome === 'created') {
          pendingStarts.push(md.name);
          continue;
        }
        if (!state.workersStarted) continue;
        const handle = getExternalWorkflowHandle(mdWorkflowId(facts.namespace, md.name));
        if (change.spec) await handle.signal(machineDeploymentSpecSignal, { spec: md, cause: 'capt apply' });
        if (change.scale) await handle.signal(scaleSignal, md.replicas);
      }
      for (const name of diff.removed) await getExternalWorkflowHandle(mdWorkflowId(facts.namespace, name)).signal(deleteOwnerSignal, { clusterDeleting: false });
      return refresh();
    },
    { validator: (next) => validateClusterChange(state.model, next, state.children[`KubeadmControlPlane/${state.model.controlPlane.name}`]?.version) },
  );

  async function create(): Promise<void> {
    if (!state.infrastructureReady) {
      setStep(`creating ${state.model.infrastructure.kind} on provider ${facts.provider}`);
      const infra = await provider.createClusterInfrastructure({ namespace: facts.namespace, name: facts.name, adminKubeconfig: { secret: `clusters/${facts.namespace}/${facts.name}/admin.kubeconfig` } });
      facts.endpoint = `${infra.endpoint.host}:${infra.endpoint.port}`;
      setStep('creating the cluster certificate authorities and admin credentials');
      await core.ensureClusterSecrets(facts.namespace, facts.name, facts.endpoint);
      state.infrastructureReady = true;
      setStep(`starting control plane ${state.model.controlPlane.name}`);
      await startChild(controlPlaneWorkflow, {
        workflowId: kcpWorkflowId(facts.namespace, state.model.controlPlane.name), args: [{ cluster: facts, spec: state.model.controlPlane, owner: self }],
        parentClosePolicy: ParentClosePolicy.ABANDON, staticSummary: `KubeadmControlPlane ${facts.namespace}/${state.model.controlPlane.name} of cluster ${facts.name}`,
      });
    }
    if (!state.workersStarted) {
      setStep('waiting for the control plane to initialise');
      await condition(() => state.deleting || !!state.children[`KubeadmControlPlane/${state.model.controlPlane.name}`]?.initialized);
      if (state.deleting) return;
      for (const md of state.model.machineDeployments) await startMachineDeployment(md.name);
      state.workersStarted = true;
    }
    setStep('reconciled');
  }

  async function remove(): Promise<void> {
    if (state.workersStarted) {
      setStep('deleting MachineDeployments (machines skip drain while the cluster is deleted)');
      for (const md of state.model.machineDeployments) {
        await getExternalWorkflowHandle(mdWorkflowId(facts.namespace, md.name)).signal(deleteOwnerSignal, { clusterDeleting: true });
      }
      await condition(() => state.model.machineDeployments.every((md) => state.children[`MachineDeployment/${md.name}`]?.deleted ?? true));
    }
    if (state.infrastructureReady) {
      setStep(`deleting control plane ${state.model.controlPlane.name}`);
      await getExternalWorkflowHandle(kcpWorkflowId(facts.namespace, state.model.controlPlane.name)).signal(deleteOwnerSignal, { clusterDeleting: true });
      await condition(() => state.children[`KubeadmControlPlane/${state.model.controlPlane.name}`]?.deleted ?? false);
    }
    setStep(`deleting ${state.model.infrastructure.kind}`);
    await provider.deleteClusterInfrastructure(facts.namespace, facts.name);
    await core.deleteClusterSecrets(facts.namespace, facts.name);
    state.deleted = true;
    setStep('deleted');
  }

  refresh();
  if (!state.deleting) await create();
  while (!state.deleting) {
    await condition(() => state.deleting || pendingStarts.length > 0 || workflowInfo().continueAsNewSuggested);
    while (pendingStarts.length && !state.deleting && state.workersStarted) await startMachineDeployment(pendingStarts.shift()!);
    if (workflowInfo().continueAsNewSuggested && !state.deleting) {
      await condition(allHandlersFinished);
      return continueAsNew<typeof clusterWorkflow>({ model: state.model, state });
    }
  }
  await remove();
  return refresh();
}
