import {
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  getExternalWorkflowHandle,
  ParentClosePolicy,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  startChild,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Duration } from '@temporalio/common';
import type { ClusterStepReason } from '../../src/contract/steps';
import type { ClusterStatus, RunningTemplates } from '../../src/contract/cluster';
import {
  controlPlaneWorkflowId as kcpWorkflowId,
  machineDeploymentWorkflowId as mdWorkflowId,
} from '../../src/contract/workflow-ids';
import type * as coreActivities from '../../activities';
import type { ProviderActivities } from '../../providers/provider-activities';
import type { ClusterModel, MachineDeploymentModel, StandaloneMachineModel } from '../../src/api/model';
import {
  appliedModelQuery,
  applyClusterUpdate,
  childChangedSignal,
  clusterPausedSignal,
  clusterSecretsQuery,
  clusterStatusQuery,
  controlPlaneSpecSignal,
  deleteClusterUpdate,
  deleteOwnerSignal,
  issueKubeconfigUpdate,
  machineDeploymentSpecSignal,
  machineReportSignal,
  repairClusterUpdate,
  scaleSignal,
} from '../../src/contract/cluster-messages';
import { captAttributes } from '../../src/contract/search-attributes';
import { providerTaskQueue } from '../../src/contract/task-queues';
import { controlPlaneWorkflow } from '../control-plane/control-plane-workflow';
import { machineDeploymentWorkflow } from '../machine-deployment/machine-deployment-workflow';
import { clusterChangeProblems } from '../../src/spec-rules/cluster-rules';
import { rethrowActivityCause } from '../shared/activity-cause';
import { refuseProblems } from '../shared/spec-refusal';
import { diffClusterModels } from './cluster-diff';
import { deletePoolMachines, newRecord, recordMachineReport, startPoolMachines } from '../shared/machine-pool';
import { workerMachineSpec } from '../shared/worker-machine-spec';
import { machineTemplateHash } from '../machine-deployment/machine-sets';
import { sendTemplateChange, templateChange } from '../shared/in-place-change';
import { MachinePhase } from '../../src/contract/machine';
import {
  changedGeneration,
  clusterStatus,
  controlPlaneOf,
  controlPlaneRuns,
  controlPlaneTarget,
  controlPlaneUpgraded as controlPlaneUpgradedIn,
  machineDeploymentOf,
  machineDeploymentUpgrading,
  ownerKey,
  type ClusterState,
} from './cluster-status';
import { upgradePlan } from '../../src/contract/upgrade-plan';
import { clusterFailureDomains } from '../../src/contract/provider-offers';
import { topologyReleases } from './topology-upgrade';
import { waitingToStart } from '../../src/contract/cluster';
import { adminClientCredentials, type ClusterSecrets } from '../../src/contract/cluster-secrets';
import type { OwnerRebuild } from '../shared/owner-adoption';
import { ownerSupervision, rebuiltReplicas } from './owner-supervision';
import { recordUnknownSignals, unknownSignalsDetails } from '../shared/unknown-signals';
import type { OwnerRef } from '../../src/contract/owner';
import {
  continueAsNewOnTargetBuild,
  ownerContinueAsNewDue,
  ownerWorkflowTaskTimeout,
  pinToBuild,
} from '../shared/build-upgrade';
import { activityRetry } from '../shared/activity-retry';

/** One attempt of the Node health watch; then a fresh one (bounded activities, and a new worker version takes over). */
const nodeHealthAttemptSeconds = 600;

/** How often the cluster checks that its owners' workflows still run, and rebuilds the lost ones. */
export interface OwnerCheckIntervals {
  /** While a deletion waits on its owners. */
  deleting: Duration;
  /** While the cluster is idle (an activity and a timer: at 5 minutes about 1,500 events a day, well within one run's history). */
  idle: Duration;
}
const ownerCheckIntervals: OwnerCheckIntervals = { deleting: '2m', idle: '5m' };

export interface ClusterInput {
  model: ClusterModel;
  state?: ClusterState;
  /**
   * The cluster's secrets, carried across continue-as-new apart from the state so that nothing that
   * publishes the state (status, details, search attributes) can reach them.
   */
  secrets?: ClusterSecrets;
  /** Shorter owner checks for tests, which cannot wait minutes for them; the CLI never sets them. */
  ownerChecks?: OwnerCheckIntervals;
  /** WorkersAvailable follows the MachineDeployments' Available condition (set by every client since it did). */
  workersByAvailability?: boolean;
}

/** The failure domains the cluster declares for control-plane machines, as facts its control plane reads. */
const controlPlaneDomains = (model: ClusterModel) => {
  const names = clusterFailureDomains(model.infrastructure.spec)
    .filter((d) => d.controlPlane)
    .map((d) => d.name);
  return names.length ? { controlPlaneFailureDomains: names } : {};
};

/**
 * A Cluster (workflow ID `cluster/<namespace>/<name>`): cluster infrastructure and PKI, then the control
 * plane, then the MachineDeployments once the control plane is initialised. Deletion runs the other way.
 */
export async function clusterWorkflow(input: ClusterInput): Promise<ClusterStatus> {
  const model = input.model;
  const checks = input.ownerChecks ?? ownerCheckIntervals;
  const state: ClusterState = input.state ?? {
    facts: {
      namespace: model.namespace,
      name: model.name,
      provider: model.provider,
      endpoint: '',
      serviceSubnet: model.serviceSubnet,
      podSubnet: model.podSubnet,
      serviceDomain: model.serviceDomain,
      ...controlPlaneDomains(model),
    },
    model,
    infrastructureReady: false,
    children: {},
    workersStarted: false,
    deleting: false,
    deleted: false,
    createdAt: new Date().toISOString(),
    step: 'starting',
    generation: 1,
    changedAt: {},
    held: [],
    started: [],
    // From the input, not a patch marker (whose details Temporal keeps unencrypted): runs started before keep the old reading.
    ...(input.workersByAvailability ? { workersByAvailability: true } : {}),
  };
  // A run continued from before generations were kept: what it started is every MachineDeployment, once workers started.
  state.generation ??= 1;
  state.changedAt ??= {};
  state.held ??= [];
  state.started ??= state.workersStarted ? state.model.machineDeployments.map((m) => m.name) : [];
  const { changedAt, held, started } = state;
  const { facts } = state;
  const core = proxyActivities<typeof coreActivities>({
    startToCloseTimeout: '2m',
    retry: activityRetry,
  });
  const provider = proxyActivities<ProviderActivities>({
    taskQueue: providerTaskQueue(facts.provider),
    startToCloseTimeout: '5m',
    heartbeatTimeout: '20s',
    retry: activityRetry,
  });
  // Long-lived: each attempt returns after nodeHealthAttemptSeconds; a lost worker is noticed within the heartbeat timeout.
  const watcher = proxyActivities<typeof coreActivities>({
    startToCloseTimeout: `${nodeHealthAttemptSeconds + 60}s`,
    heartbeatTimeout: '30s',
    retry: activityRetry,
  });
  const self = workflowInfo().workflowId;
  // The first result recorded wins; a later run gets them from its input. Only the clusterSecrets query answers them.
  let secrets = input.secrets;
  setHandler(clusterSecretsQuery, () =>
    secrets ? { endpoint: facts.endpoint, deleting: state.deleting, secrets } : undefined,
  );

  let publishedPhase = '';
  const refresh = () => {
    const status = clusterStatus(state);
    const blocked = status.conditions.find((c) => c.status !== 'True' && c.type !== 'Available');
    const waiting = status.pending
      .filter(waitingToStart)
      .map((p) => `\n\n${p.kind} ${p.name} pending (${p.reason}): ${p.message}`)
      .join('');
    const rebuilt = status.recoveries
      .map(
        (r) =>
          `\n\n${r.kind} ${r.name} lost and rebuilt at ${r.at} (${r.cause}): ${r.adopted === undefined ? 'adopting its machines' : `adopted ${r.adopted} machines`}`,
      )
      .join('');
    const plan = status.upgradePlan;
    const planned = plan
      ? `\n\nupgrade plan: control plane ${plan.controlPlane.join(', ') || 'done'}; workers ${plan.workers.join(', ') || 'done'}`
      : '';
    setCurrentDetails(
      `**${status.phase}** (generation ${status.generation}, observed ${status.observedGeneration}): ${state.step}${blocked?.message ? `\n\n${blocked.type}: ${blocked.message}` : ''}${planned}${waiting}${rebuilt}${unknownSignalsDetails(state.unknownSignals)}`,
    );
    if (status.phase !== publishedPhase) {
      publishedPhase = status.phase;
      upsertSearchAttributes(
        captAttributes({
          kind: 'Cluster',
          namespace: facts.namespace,
          cluster: facts.name,
          phase: status.phase,
          version: state.model.controlPlane.version,
          provider: facts.provider,
        }),
      );
    }
    return status;
  };
  const setStep = (reason: ClusterStepReason, step: string) => {
    state.stepReason = reason;
    state.step = step;
    refresh();
  };

  setHandler(clusterStatusQuery, () => clusterStatus(state));
  // The cluster owns its standalone Machines: their reports keep its records, and a deleted one leaves the desired state too.
  setHandler(machineReportSignal, (report) => {
    state.machines = recordMachineReport(state.machines ?? [], report, new Date().toISOString());
    if (report.phase === MachinePhase.Deleted)
      state.model = { ...state.model, machines: (state.model.machines ?? []).filter((m) => m.name !== report.name) };
    refresh();
  });
  setHandler(childChangedSignal, (status) => {
    const key = ownerKey(status.kind, status.name);
    if ((state.children[key]?.sequence ?? -1) > status.sequence) return;
    state.children[key] = status;
    refresh();
  });
  setHandler(deleteClusterUpdate, () => {
    state.deleting = true;
    return refresh();
  });
  setHandler(
    issueKubeconfigUpdate,
    async ({ publicKey }) => {
      // The activity's own failure (a bad key, secrets gone) is what the client should read, not "Activity task failed".
      const certified = await core
        .certifyClusterAdmin(facts.namespace, facts.name, publicKey)
        .catch(rethrowActivityCause);
      return {
        clusterName: facts.name,
        user: `${facts.name}-admin`,
        server: `https://${facts.endpoint}`,
        ...certified,
      };
    },
    {
      validator: ({ publicKey }) => {
        const refuse = (message: string) => {
          throw ApplicationFailure.create({
            message: `Cluster ${facts.namespace}/${facts.name}: ${message}`,
            type: 'NotAvailable',
            nonRetryable: true,
          });
        };
        if (state.deleting) refuse('is being deleted; it has no kubeconfig to give');
        if (!state.infrastructureReady)
          refuse(
            `has no certificate authority yet (${state.step}); ask again once \`capt get clusters\` shows it Provisioning`,
          );
        if (
          typeof publicKey !== 'string' ||
          !publicKey.startsWith('-----BEGIN PUBLIC KEY-----') ||
          publicKey.length > 2048
        )
          refuse('a kubeconfig request carries one PEM public key (SPKI, at most 2 KiB)');
      },
    },
  );

  /** Starts a MachineDeployment's workflow; a rebuilt one (its workflow lost) keeps the replicas it had and adopts its machines. */
  const startMachineDeployment = async (name: string, rebuild?: OwnerRebuild, pruned?: MachineDeploymentModel) => {
    const applied = pruned ?? state.model.machineDeployments.find((m) => m.name === name)!;
    const generation = changedGeneration(state, 'MachineDeployment', name);
    const spec = rebuild
      ? { ...applied, replicas: rebuiltReplicas(applied.replicas, generation, rebuild.previous) }
      : applied;
    if (!rebuild) started.push(name);
    await startChild(machineDeploymentWorkflow, {
      workflowId: mdWorkflowId(facts.namespace, name),
      args: [{ cluster: facts, spec, owner: self, generation, clusterPaused: state.model.paused, rebuild }],
      parentClosePolicy: ParentClosePolicy.ABANDON,
      workflowTaskTimeout: ownerWorkflowTaskTimeout,
      staticSummary: `MachineDeployment ${facts.namespace}/${name} of cluster ${facts.name}${rebuild ? ' (rebuilt)' : ''}`,
    });
  };
  const startControlPlane = async (rebuild?: OwnerRebuild) => {
    // Mid-way through a chained upgrade, a rebuilt control plane goes on from the step it was given.
    const applied = { ...state.model.controlPlane, version: controlPlaneTarget(state) };
    const generation = changedGeneration(state, 'KubeadmControlPlane', applied.name);
    const spec = rebuild
      ? { ...applied, replicas: rebuiltReplicas(applied.replicas, generation, rebuild.previous) }
      : applied;
    await startChild(controlPlaneWorkflow, {
      workflowId: kcpWorkflowId(facts.namespace, applied.name),
      args: [{ cluster: facts, spec, owner: self, generation, clusterPaused: state.model.paused, rebuild }],
      parentClosePolicy: ParentClosePolicy.ABANDON,
      workflowTaskTimeout: ownerWorkflowTaskTimeout,
      staticSummary: `KubeadmControlPlane ${facts.namespace}/${applied.name} of cluster ${facts.name}${rebuild ? ' (rebuilt)' : ''}`,
    });
  };
  const supervision = ownerSupervision({
    state,
    refresh,
    start: (owner, rebuild, pruned) =>
      owner.kind === 'MachineDeployment'
        ? startMachineDeployment(owner.name, rebuild, pruned)
        : startControlPlane(rebuild),
  });
  const controlPlaneRef = (): OwnerRef => ({ kind: 'KubeadmControlPlane', name: state.model.controlPlane.name });
  const machineDeploymentRef = (name: string): OwnerRef => ({ kind: 'MachineDeployment', name });
  /** The owners that should be running: the control plane once started, the MachineDeployments started and not deleted. */
  const wantedOwners = (): OwnerRef[] => [
    ...(state.infrastructureReady && !controlPlaneOf(state)?.deleted ? [controlPlaneRef()] : []),
    ...started.filter((name) => !machineDeploymentOf(state, name)?.deleted).map(machineDeploymentRef),
  ];
  setHandler(repairClusterUpdate, ({ dryRun }) => supervision.repair(wantedOwners(), dryRun));
  const standaloneSpec = (m: StandaloneMachineModel) =>
    workerMachineSpec(facts, m.name, m.template, {
      labels: { ...m.template.labels, 'cluster.x-k8s.io/cluster-name': facts.name },
      annotations: m.template.annotations,
      owner: self,
    });
  /** Standalone Machines of the model not started yet: started now, as an owner starts its machines. */
  const startStandaloneMachines = async () => {
    const records = (state.machines ??= []);
    const toStart = (state.model.machines ?? []).filter((m) => !records.some((r) => r.name === m.name));
    if (!toStart.length) return;
    const now = new Date().toISOString();
    records.push(...toStart.map((m) => newRecord(m.name, machineTemplateHash(m.template), m.template.version, now)));
    const refused = await startPoolMachines(
      toStart.map((m) => ({ spec: standaloneSpec(m), summary: `Machine ${m.name} of cluster ${facts.name}` })),
    );
    if (!refused.length) return;
    // A machine of that name existed before (its workflow ID is taken): it is dropped from the desired state, and the step says why.
    state.machines = state.machines!.filter((r) => !refused.includes(r.name));
    state.model = { ...state.model, machines: (state.model.machines ?? []).filter((m) => !refused.includes(m.name)) };
    setStep(
      state.stepReason ?? 'Reconciled',
      `Machine ${refused.join(', ')} not started: a machine of that name existed before; apply it under a new name`,
    );
  };
  const dropName = (list: string[], name: string) => list.includes(name) && list.splice(list.indexOf(name), 1);
  const notStarted = () => state.model.machineDeployments.filter((m) => !started.includes(m.name)).map((m) => m.name);
  const controlPlaneUpgraded = () => controlPlaneUpgradedIn(state);
  /**
   * The held MachineDeployments that take their new version now the control plane runs it: all of them, or for
   * a cluster made from a ClusterClass, the next ones in its topology's order.
   */
  const releases = () =>
    state.model.topology
      ? topologyReleases(state.model.topology, held, (name) => machineDeploymentUpgrading(state, name))
      : [...held];
  /**
   * A version several minors ahead, which a ClusterClass listing spec.kubernetesVersions allows, is a chained
   * upgrade: the control plane is given each step of Cluster API's plan once it runs the one before.
   */
  const planChainedUpgrade = (next: ClusterModel) => {
    // A chain under way keeps its step when another field of the control plane changes (its target cannot: validator).
    if (state.upgrade) return;
    // From the version the control plane runs; one not started yet starts at the target.
    const running = controlPlaneOf(state)?.version;
    const versions = next.topology?.kubernetesVersions;
    const plan = versions && running && upgradePlan(versions, next.controlPlane.version, running, undefined);
    state.upgrade =
      plan && !('refused' in plan) && plan.controlPlane.length > 1
        ? { controlPlaneAt: plan.controlPlane[0]!, controlPlane: plan.controlPlane.slice(1) }
        : undefined;
  };
  /** The control plane runs a chained upgrade's step: the next one goes (the last ends the chain). */
  const nextChainedStep = async () => {
    const upgrade = state.upgrade!;
    const [version, ...rest] = upgrade.controlPlane as [string, ...string[]];
    const step = `chained upgrade: ${upgrade.controlPlaneAt} done, control plane to ${version}`;
    state.upgrade = rest.length ? { controlPlaneAt: version, controlPlane: rest } : undefined;
    const spec = { ...state.model.controlPlane, version };
    await supervision.tell(
      controlPlaneRef(),
      (kcp) =>
        kcp.signal(controlPlaneSpecSignal, {
          spec,
          cause: step,
          generation: changedGeneration(state, 'KubeadmControlPlane', spec.name),
        }),
      step,
    );
    setStep(state.stepReason ?? 'Reconciled', step);
  };
  const sendMachineDeploymentSpec = (name: string, cause: string) => {
    const spec = state.model.machineDeployments.find((m) => m.name === name)!;
    return supervision.tell(
      machineDeploymentRef(name),
      (md) =>
        md.signal(machineDeploymentSpecSignal, {
          spec,
          cause,
          generation: changedGeneration(state, 'MachineDeployment', name),
        }),
      cause,
    );
  };
  const runningTemplates = (model: ClusterModel): RunningTemplates => ({
    controlPlane: controlPlaneOf(state)?.templateHash,
    machineDeployments: Object.fromEntries(
      model.machineDeployments.map((m) => [m.name, machineDeploymentOf(state, m.name)?.templateHash]),
    ),
  });
  setHandler(appliedModelQuery, () => ({ model: state.model, running: runningTemplates(state.model) }));
  setHandler(
    applyClusterUpdate,
    async (next) => {
      const previous = state.model;
      const diff = diffClusterModels(previous, next, runningTemplates(previous));
      state.model = next;
      if (next.paused !== previous.paused) {
        const owners = [
          kcpWorkflowId(facts.namespace, next.controlPlane.name),
          ...started.map((name) => mdWorkflowId(facts.namespace, name)),
        ];
        // An owner not started yet starts with the model's paused; only running ones are told.
        if (state.infrastructureReady)
          for (const id of owners)
            await getExternalWorkflowHandle(id)
              .signal(clusterPausedSignal, { paused: next.paused })
              .catch(() => undefined);
      }
      const changes =
        [diff.controlPlane, ...diff.machineDeployments].some((c) => c.outcome !== 'unchanged') ||
        diff.removed.length > 0 ||
        diff.cluster !== 'unchanged';
      if (!changes) return refresh();
      const generation = ++state.generation!;
      if (diff.controlPlane.outcome !== 'unchanged')
        changedAt[ownerKey('KubeadmControlPlane', next.controlPlane.name)] = generation;
      // A control plane rebuilt here starts from the spec just applied: no message is needed after that.
      if (diff.controlPlane.spec) planChainedUpgrade(next);
      if (diff.controlPlane.spec || diff.controlPlane.scale) {
        const spec = { ...next.controlPlane, version: controlPlaneTarget(state) };
        await supervision.tell(
          controlPlaneRef(),
          async (kcp) => {
            if (diff.controlPlane.spec)
              await kcp.signal(controlPlaneSpecSignal, { spec, cause: 'capt apply', generation });
            if (diff.controlPlane.scale)
              await kcp.signal(scaleSignal, { replicas: next.controlPlane.replicas, generation });
          },
          'capt apply',
        );
      }
      for (const change of diff.machineDeployments) {
        if (change.outcome === 'unchanged') continue;
        changedAt[ownerKey('MachineDeployment', change.name)] = generation;
        // Not started yet (new, or the control plane still initialising): it starts with this spec.
        if (change.outcome === 'created' || !started.includes(change.name)) continue;
        const md = next.machineDeployments.find((m) => m.name === change.name)!;
        const before = previous.machineDeployments.find((m) => m.name === change.name)!;
        if (change.scale)
          await supervision.tell(
            machineDeploymentRef(md.name),
            (h) => h.signal(scaleSignal, { replicas: md.replicas, generation }),
            'capt apply',
          );
        if (!change.spec) continue;
        // As Cluster API's topology controller does: workers take a new version only after the control plane runs it.
        const newVersion = md.template.version !== before.template.version;
        if (held.includes(md.name) || (newVersion && (diff.controlPlane.spec || !controlPlaneUpgraded()))) {
          if (!held.includes(md.name)) held.push(md.name);
        } else {
          await sendMachineDeploymentSpec(md.name, 'capt apply');
        }
      }
      for (const change of diff.machines.filter((c) => c.outcome === 'configured')) {
        const was = previous.machines!.find((m) => m.name === change.name)!;
        const now = next.machines!.find((m) => m.name === change.name)!;
        const [before, after] = [standaloneSpec(was), standaloneSpec(now)];
        await sendTemplateChange(facts.namespace, [change.name], templateChange(before, after));
      }
      if (diff.removedMachines.length) await deletePoolMachines(facts.namespace, diff.removedMachines, false);
      for (const name of diff.removed) {
        dropName(held, name);
        dropName(started, name);
        const deleting = { clusterDeleting: false };
        const spec = previous.machineDeployments.find((m) => m.name === name)!;
        await supervision.tell(
          machineDeploymentRef(name),
          (h) => h.signal(deleteOwnerSignal, deleting),
          'capt apply (pruned)',
          { deleting, spec },
        );
      }
      return refresh();
    },
    // The control plane's running version, which an undo may have moved off the applied one, is where an upgrade starts.
    {
      validator: (next) =>
        refuseProblems(
          clusterChangeProblems(state.model, next, controlPlaneOf(state)?.version, state.upgrade?.controlPlane),
        ),
    },
  );

  /** Paused: the step says so and nothing goes on until unpaused (or `also` holds). */
  async function whilePaused(also: () => boolean = () => false): Promise<void> {
    if (!state.model.paused) return;
    const [reason, step] = [state.stepReason ?? 'Starting', state.step];
    setStep(
      'Paused',
      `paused (Cluster spec.paused or cluster.x-k8s.io/paused); nothing is carried out until unpaused. Next: ${step}`,
    );
    await condition(() => !state.model.paused || also());
    setStep(reason, step);
  }

  async function create(): Promise<void> {
    await whilePaused();
    if (!state.infrastructureReady) {
      if (!secrets) {
        setStep('CreatingSecrets', 'creating the cluster certificate authorities and admin credentials');
        secrets = await core.createClusterSecrets();
      }
      setStep('CreatingInfrastructure', `creating ${state.model.infrastructure.kind} on provider ${facts.provider}`);
      const infra = await provider.createClusterInfrastructure({
        namespace: facts.namespace,
        name: facts.name,
        adminCredentials: adminClientCredentials(secrets),
      });
      facts.endpoint = `${infra.endpoint.host}:${infra.endpoint.port}`;
      // Owners started from now on read it; a cluster made before providers said it has none, and replaces.
      if (infra.inPlace) facts.inPlace = infra.inPlace;
      state.infrastructureReady = true;
      setStep('StartingControlPlane', `starting control plane ${state.model.controlPlane.name}`);
      await startControlPlane();
    }
    if (!state.workersStarted) {
      setStep('WaitingForControlPlane', 'waiting for the control plane to initialise');
      await condition(() => state.deleting || !!controlPlaneOf(state)?.initialized);
      if (state.deleting) return;
      await whilePaused();
      for (const name of notStarted()) await startMachineDeployment(name);
      await startStandaloneMachines();
      state.workersStarted = true;
    }
    setStep('Reconciled', 'reconciled');
  }

  async function remove(): Promise<void> {
    // As Cluster API: a paused cluster's deletion waits for the unpause too.
    await whilePaused();
    if (state.machines?.length) {
      setStep(
        'DeletingMachines',
        `deleting ${state.machines.length} standalone machines (no drain while the cluster is deleted)`,
      );
      await deletePoolMachines(
        facts.namespace,
        state.machines.map((m) => m.name),
        true,
      );
      await condition(() => !state.machines?.length);
    }
    if (state.workersStarted) {
      setStep(
        'DeletingMachineDeployments',
        'deleting MachineDeployments (machines skip drain while the cluster is deleted)',
      );
      const deleting = state.model.machineDeployments
        .filter((md) => !machineDeploymentOf(state, md.name)?.deleted)
        .map((md) => machineDeploymentRef(md.name));
      for (const md of deleting) await deleteOwner(md);
      await supervisedDeletion(deleting, () =>
        state.model.machineDeployments.every((md) => machineDeploymentOf(state, md.name)?.deleted ?? true),
      );
    }
    if (state.infrastructureReady) {
      setStep('DeletingControlPlane', `deleting control plane ${state.model.controlPlane.name}`);
      if (!controlPlaneOf(state)?.deleted) await deleteOwner(controlPlaneRef());
      await supervisedDeletion([controlPlaneRef()], () => controlPlaneOf(state)?.deleted ?? false);
    }
    setStep('DeletingInfrastructure', `deleting ${state.model.infrastructure.kind}`);
    await provider.deleteClusterInfrastructure(facts.namespace, facts.name);
    state.deleted = true;
    setStep('Deleted', 'deleted');
  }

  /** Asks an owner to delete its machines and finish; a lost one is rebuilt to do it. */
  async function deleteOwner(owner: OwnerRef): Promise<void> {
    const deleting = { clusterDeleting: true };
    await supervision.tell(owner, (h) => h.signal(deleteOwnerSignal, deleting), 'capt delete cluster', { deleting });
  }

  /**
   * Waits until `done`; an owner whose workflow is lost meanwhile (terminated mid-deletion) is rebuilt to
   * finish deleting, so a cluster's deletion always ends. Checked every few minutes while nothing moves.
   */
  async function supervisedDeletion(owners: OwnerRef[], done: () => boolean): Promise<void> {
    while (!(await condition(done, checks.deleting))) {
      const deleted = (o: OwnerRef) => state.children[ownerKey(o.kind, o.name)]?.deleted;
      await supervision.rebuildLost(
        owners.filter((o) => !deleted(o)),
        'capt delete cluster (waiting for it)',
        { deleting: { clusterDeleting: true } },
      );
    }
  }

  /** One watch of the cluster's Nodes tells each machine of its Node's health, from the control plane's initialisation to the cluster's deletion. */
  const nodeHealth = new CancellationScope();
  let watchingNodeHealth: Promise<void> = Promise.resolve();
  const stopNodeHealth = async () => {
    nodeHealth.cancel();
    await watchingNodeHealth;
  };

  recordUnknownSignals((state.unknownSignals ??= []), refresh);
  refresh();
  if (!state.deleting) await create();
  if (!state.deleting) {
    watchingNodeHealth = nodeHealth
      .run(async () => {
        for (;;)
          await watcher.watchNodeHealth({
            namespace: facts.namespace,
            cluster: facts.name,
            runForSeconds: nodeHealthAttemptSeconds,
          });
      })
      .catch((err: unknown) => {
        if (!isCancellation(err)) throw err;
      });
  }
  while (!state.deleting) {
    const releasable = () => controlPlaneUpgraded() && releases().length > 0;
    const chainedStepDue = () => !!state.upgrade && controlPlaneRuns(state, state.upgrade.controlPlaneAt);
    await whilePaused(() => state.deleting || ownerContinueAsNewDue());
    const standaloneToStart = () =>
      (state.model.machines ?? []).some((m) => !state.machines?.some((r) => r.name === m.name));
    const moved = await condition(
      () =>
        state.deleting ||
        state.model.paused ||
        notStarted().length > 0 ||
        standaloneToStart() ||
        releasable() ||
        chainedStepDue() ||
        ownerContinueAsNewDue(),
      checks.idle,
    );
    if (state.deleting) break;
    // Idle, the cluster still looks after its owners: one terminated meanwhile is rebuilt without waiting for an operator.
    if (!moved && !state.model.paused)
      await supervision.rebuildLost(wantedOwners(), `the cluster's check every ${checks.idle}`);
    for (const name of state.model.paused ? [] : notStarted()) await startMachineDeployment(name);
    if (!state.model.paused) await startStandaloneMachines();
    if (!state.model.paused && chainedStepDue()) await nextChainedStep();
    if (!state.model.paused && releasable()) {
      const released = releases();
      for (const name of released) dropName(held, name);
      for (const name of released)
        await sendMachineDeploymentSpec(
          name,
          `capt apply (held until the control plane ran ${state.model.controlPlane.version})`,
        );
      refresh();
    }
    if (ownerContinueAsNewDue()) {
      await stopNodeHealth();
      await condition(allHandlersFinished);
      return continueAsNewOnTargetBuild<typeof clusterWorkflow>({
        model: state.model,
        state,
        secrets,
        ownerChecks: input.ownerChecks,
      });
    }
  }
  await stopNodeHealth();
  await remove();
  return refresh();
}

pinToBuild(clusterWorkflow);
