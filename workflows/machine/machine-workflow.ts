import type { MachineStepReason } from '../../src/contract/steps';
import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  getExternalWorkflowHandle,
  isCancellation,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
  type ActivityOptions,
} from '@temporalio/workflow';
import type * as coreActivities from '../../activities';
import type { ProviderActivities } from '../../providers/provider-activities';
import type { BootstrapCheck } from '../../providers/provider';
import type { BootstrapDataRequest } from '../../src/contract/bootstrap-request';
import { machineReportSignal } from '../../src/contract/cluster-messages';
import {
  changeMachineUpdate,
  deleteMachineUpdate,
  updateInPlaceUpdate,
  drainProgressSignal,
  machineStatusQuery,
  machineTemplateChangedSignal,
  nodeHealthSignal,
  reportedStatusMemo,
  requestMachineDeletionSignal,
} from '../../src/contract/machine-messages';
import { CaptNodeHealthy, CaptPhase, machineSearchAttributes } from '../../src/contract/search-attributes';
import { providerTaskQueue } from '../../src/contract/task-queues';
import {
  controlPlaneCleanupHook,
  coarsePhase,
  DeletionGate,
  MachinePhase,
  nodeMachineAnnotation,
  excludeNodeDrainingAnnotation,
  excludeVolumeDetachAnnotation,
  preDrainHookPrefix,
  preTerminateHookPrefix,
  type MachineSpec,
  type MachineSpecChange,
  type MachineStatus,
} from '../../src/contract/machine';
import type { MachineState } from './machine-model';
import { mergeTemplateChange, newKubeletArgs, validateInPlaceUpdate, validateMachineChange } from './machine-change';
import { kubeletArgs, kubeletArgsFrom } from '../../src/contract/in-place';
import { machineReport, reportContext, reportKey, startedByOwnerKey } from './machine-report';
import { machineStatus } from './machine-status';
import { continueAsNewOnTargetBuild, pinToBuild } from '../shared/build-upgrade';
import { recordUnknownSignals, unknownSignalsDetails } from '../shared/unknown-signals';
import { machineDeleted, machineRunning } from '../shared/capt-metrics';
import { activityRetry } from '../shared/activity-retry';

export interface MachineWorkflowInput {
  spec: MachineSpec;
  /** Carried across continue-as-new. */
  state?: MachineState;
}

const nodeStartupChunkSeconds = 600;

/** One Machine from creation to deletion (workflow ID `machine/<namespace>/<name>`). */
export async function machineWorkflow(input: MachineWorkflowInput): Promise<MachineStatus> {
  const nowISO = () => new Date().toISOString();
  const state: MachineState = input.state ?? {
    spec: input.spec,
    createdAt: nowISO(),
    bootstrapDataReady: false,
    nodeSynced: false,
    nodeSyncPending: false,
    step: 'starting',
  };
  const { spec } = state;
  const ref = { namespace: spec.namespace, cluster: spec.cluster, name: spec.name };
  const target = { namespace: spec.namespace, cluster: spec.cluster };
  const metricTags = { ...target, role: spec.role };
  // The machine's name on its Node, as Cluster API puts it: the cluster's Node watch finds the machine by it.
  /** What the machine keeps on its Node, as the wait for it and each later sync put it there. */
  const nodeFields = () => ({
    labels: spec.labels,
    annotations: { ...spec.annotations, [nodeMachineAnnotation]: spec.name },
    ...(spec.taints ? { taints: spec.taints } : {}),
  });

  // Short calls: a dead worker's activity is retried within a minute.
  const core = proxyActivities<typeof coreActivities>({
    startToCloseTimeout: '1m',
    retry: activityRetry,
  });
  // Rendering bootstrap data takes milliseconds: run in the workflow's own task, it costs no round trip through the server.
  // Its retries stay in the task only while 10 s apart at most (the SDK's default, a minute, is above the 30 s backoff):
  // a machine whose cluster's workflow could not answer held its task, and a worker's task slot, for good.
  const local = proxyLocalActivities<typeof coreActivities>({
    startToCloseTimeout: '1m',
    retry: activityRetry,
    localRetryThreshold: '10s',
  });
  const waits = proxyActivities<typeof coreActivities>({
    startToCloseTimeout: '30 days',
    heartbeatTimeout: '30s',
    retry: activityRetry,
  });
  const provider = proxyActivities<ProviderActivities>({
    taskQueue: providerTaskQueue(spec.provider),
    startToCloseTimeout: '5m',
    heartbeatTimeout: '20s',
    retry: activityRetry,
  });
  const bootstrapTimeoutSeconds = spec.bootstrapTimeoutSeconds ?? 600;
  const bootstrapWaitBounds: ActivityOptions = {
    taskQueue: providerTaskQueue(spec.provider),
    startToCloseTimeout: `${bootstrapTimeoutSeconds + 300}s`,
    heartbeatTimeout: '30s',
  };
  const providerWaits = proxyActivities<ProviderActivities>(bootstrapWaitBounds);
  // A create and its bootstrap wait in one call: the wait's bounds, the create's retries.
  const provisioning = proxyActivities<ProviderActivities>({
    ...bootstrapWaitBounds,
    retry: activityRetry,
  });

  // Started by an owner, the machine already carries its first search attributes; upserts follow phase changes.
  let publishedPhase = `${workflowInfo().typedSearchAttributes.get(CaptPhase) ?? ''} ${workflowInfo().typedSearchAttributes.get(CaptNodeHealthy) ?? 'False'}`;
  // A continued run already told its owner what it was; a new one is what its owner assumes.
  let reported = input.state ? reportKey(machineStatus(state), ...reportContext(state)) : startedByOwnerKey(spec.name);
  /** Recomputes status after every change: current details, search attributes, and the owner's notice. */
  function refresh(): MachineStatus {
    const status = machineStatus(state);
    const blocked = status.conditions.find((c) => c.type === 'Deleting')?.message;
    // A running machine whose Node turned unhealthy says so where an operator looks first.
    const node =
      status.phase === MachinePhase.Running
        ? status.conditions.find((c) => c.type === 'NodeHealthy' && c.status === 'False')
        : undefined;
    setCurrentDetails(
      `**${status.phase}**: ${state.step}${blocked && blocked !== state.step ? `\n\n${blocked}` : ''}${node ? `\n\nNodeHealthy False (${node.reason}): ${node.message ?? ''}` : ''}${unknownSignalsDetails(state.unknownSignals)}`,
    );
    // Phase and Node health together: at Running both change at once, and one upsert carries them.
    const nodeHealthy = status.conditions.find((c) => c.type === 'NodeHealthy')?.status ?? 'Unknown';
    if (`${coarsePhase(status.phase)} ${nodeHealthy}` !== publishedPhase) {
      publishedPhase = `${coarsePhase(status.phase)} ${nodeHealthy}`;
      upsertSearchAttributes(machineSearchAttributes(spec, status.phase, nodeHealthy));
    }
    // The owner hears only of what it plans with (see machine-report.ts), a few times in the machine's life.
    const key = reportKey(status, ...reportContext(state));
    if (key !== reported && status.phase !== 'Deleted') {
      reported = key;
      void report(status);
    }
    return status;
  }
  /** Reports on their way through the coalescer: a run continues as new only once they arrived. */
  let reportsInFlight = 0;
  function report(status: MachineStatus): Promise<void> {
    state.reports = (state.reports ?? 0) + 1;
    // What the owner's record now tells of, for the management API's Machine object (see reportedStatusMemo).
    if (spec.statusMemo) upsertMemo({ [reportedStatusMemo]: { ...status, sequence: state.reports } });
    if (!spec.owner) return Promise.resolve();
    const news = machineReport(status, state.reports, ...reportContext(state));
    if (!spec.batchedReports)
      return getExternalWorkflowHandle(spec.owner)
        .signal(machineReportSignal, news)
        .catch(() => undefined);
    // An owner that takes reports in batches gets them through this worker's coalescer, within this task.
    reportsInFlight++;
    return local
      .deliverMachineReport({ owner: spec.owner, report: news, byUpdate: spec.reportsByUpdate })
      .catch(() => undefined)
      .finally(() => reportsInFlight--);
  }
  const setStep = (reason: MachineStepReason, step: string) => {
    state.stepReason = reason;
    state.step = step;
    refresh();
  };

  setHandler(machineStatusQuery, () => machineStatus(state));
  const requestDeletion = (opts: { clusterDeleting?: boolean }, byOwner = false) => {
    if (!state.deletion) {
      const now = nowISO();
      state.deletion = {
        requestedAt: now,
        clusterDeleting: opts.clusterDeleting ?? false,
        gate: DeletionGate.PreDrainHooks,
        gateStartedAt: now,
      };
      Object.assign(state, { step: 'deletion requested', stepReason: 'DeletionRequested' });
      // The owner that asked already counts the machine as leaving: no report for that.
      if (byOwner) reported = reportKey(machineStatus(state), ...reportContext(state));
    }
    if (byOwner) delete spec.annotations[controlPlaneCleanupHook];
    return refresh();
  };
  setHandler(deleteMachineUpdate, (opts) => requestDeletion(opts));
  setHandler(nodeHealthSignal, (health) => {
    // Before Running the machine waits for its Node itself; after deletion began the Node's health no longer matters.
    if (!state.nodeRef || state.deletion) return;
    state.node = health;
    refresh();
  });
  setHandler(requestMachineDeletionSignal, (opts) => void requestDeletion(opts, true));
  setHandler(changeMachineUpdate, (change) => applyChange(change), {
    validator: (change) => validateMachineChange(spec, change),
  });
  setHandler(
    updateInPlaceUpdate,
    (request) => {
      // Asked again (a retried activity) or already done: nothing more to do.
      if (!state.inPlaceUpdate && (spec.version !== request.version || newKubeletArgs(spec, request))) {
        state.inPlaceUpdate = request;
        setStep('UpdatingInPlace', `updating in place to ${request.version} (from ${spec.version})`);
      }
      return machineStatus(state);
    },
    { validator: (request) => validateInPlaceUpdate(state, request) },
  );
  setHandler(machineTemplateChangedSignal, (change) => {
    const merged = mergeTemplateChange(spec, change);
    try {
      validateMachineChange(spec, merged);
    } catch (err) {
      return log.warn('template change from the owner refused', { error: (err as Error).message });
    }
    applyChange(merged);
  });
  function applyChange(change: MachineSpecChange): MachineStatus {
    Object.assign(spec, change);
    // Before the Node is known, the wait that finds it syncs the change (or the loop does, once it returns).
    state.nodeSyncPending ||=
      change.labels !== undefined || change.annotations !== undefined || change.taints !== undefined;
    const reportsBefore = state.reports;
    const status = refresh();
    // Labels and annotations are no news to the owner's plans, but its record's sequence tells the management
    // API's bridge that the Machine object is behind: without a report it showed them only at the next one.
    if (state.reports === reportsBefore && patched('report-metadata-change')) void report(status);
    return status;
  }
  setHandler(drainProgressSignal, (progress) => {
    if (state.deletion?.gate !== DeletionGate.Drain) return;
    state.deletion.drain = progress;
    state.deletion.message = progress.blocked.length
      ? `draining node ${state.nodeRef?.name}: ${progress.blocked.join('; ')}`
      : `draining node ${state.nodeRef?.name}: ${progress.evicted} pods evicted`;
    refresh();
  });
  recordUnknownSignals((state.unknownSignals ??= []), refresh);

  /** Keeps the sentinel's verdict; a failed bootstrap says so and the machine waits to be deleted or remediated. */
  function recordBootstrap(check: BootstrapCheck): boolean {
    state.bootstrap = check.state === 'failed' ? check : { state: 'succeeded' };
    if (check.state !== 'failed') return false;
    setStep(
      'BootstrapFailed',
      `bootstrap failed: '${check.command}' exited ${check.exitCode}; waiting to be deleted or remediated`,
    );
    return true;
  }

  /** What the machine's bootstrap data is rendered from: names and facts, no secret. */
  const bootstrapRequest = (): BootstrapDataRequest => ({
    namespace: spec.namespace,
    cluster: spec.cluster,
    machine: spec.name,
    role: spec.bootstrap.role,
    kubernetesVersion: spec.version,
    controlPlaneEndpoint: spec.bootstrap.controlPlaneEndpoint,
    spec: spec.bootstrap.config,
    serviceSubnet: spec.bootstrap.serviceSubnet,
    podSubnet: spec.bootstrap.podSubnet,
    serviceDomain: spec.bootstrap.serviceDomain,
  });

  /** The machine as its provider creates it, but for its bootstrap data. */
  const machineInfra = () => ({
    ...ref,
    role: spec.role,
    version: spec.version,
    failureDomain: spec.failureDomain,
    template: spec.infrastructure.spec,
  });

  /** The step of one provider call that creates the machine and waits for its sentinel (rendering its data first). */
  const provisioningStep = (rendering: boolean) =>
    setStep(
      'CreatingInfrastructure',
      `${rendering ? 'rendering bootstrap data, ' : ''}creating ${spec.infrastructure.kind} on provider ${spec.provider} and waiting for its bootstrap success sentinel (timeout ${bootstrapTimeoutSeconds}s)`,
    );
  /** Keeps what such a call made; true when the bootstrap failed. */
  function provisioned(done: { providerID: string; addresses: string[]; bootstrap: BootstrapCheck }): boolean {
    state.infrastructure = { providerID: done.providerID, addresses: done.addresses };
    return recordBootstrap(done.bootstrap);
  }

  async function create(): Promise<void> {
    if (!state.infrastructure && spec.bootstrapInProvisioning) {
      // The provider's call renders the bootstrap data itself: it is in no history, and no local activity runs for it.
      state.provisioning = true;
      provisioningStep(true);
      const done = await provisioning.provisionBootstrappedMachine(
        { ...machineInfra(), bootstrap: bootstrapRequest() },
        bootstrapTimeoutSeconds,
      );
      Object.assign(state, { bootstrapDataReady: true, provisioning: false });
      if (provisioned(done)) return;
    }
    if (!state.infrastructure) {
      // The user-data goes straight to the provider's activity and is kept in no state, status or query.
      setStep('RenderingBootstrapData', 'rendering bootstrap data');
      const bootstrapData = await local.createBootstrapData(bootstrapRequest());
      state.bootstrapDataReady = true;
      const infraSpec = { ...machineInfra(), bootstrapData };
      if (spec.provisionInOneActivity) {
        // Created and bootstrapped in one provider call: a workflow task and an activity fewer per machine.
        provisioningStep(false);
        if (provisioned(await provisioning.provisionMachineInfrastructure(infraSpec, bootstrapTimeoutSeconds))) return;
      } else {
        setStep('CreatingInfrastructure', `creating ${spec.infrastructure.kind} on provider ${spec.provider}`);
        const infra = await provider.createMachineInfrastructure(infraSpec);
        state.infrastructure = { providerID: infra.providerID, addresses: infra.addresses };
      }
    }
    if (!state.bootstrap) {
      setStep(
        'WaitingForBootstrap',
        `waiting for the bootstrap success sentinel (timeout ${bootstrapTimeoutSeconds}s)`,
      );
      if (recordBootstrap(await providerWaits.waitForBootstrap(ref, bootstrapTimeoutSeconds))) return;
    }
    if (!state.nodeRef) {
      setStep('WaitingForNode', `waiting for a Ready Node with providerID ${state.infrastructure!.providerID}`);
      const node = await readyNode();
      state.nodeRef = { name: node.nodeName };
      state.node = node.readiness;
      // Kept from the wait's result: no command of its own, so histories from before it replay unchanged.
      state.nodeInfo = node.nodeInfo;
      state.nodeSynced = true;
    }
    if (!state.nodeSynced) await syncNode();
    setStep('Running', 'running');
    if (!state.runningAt) {
      state.runningAt = nowISO();
      // A machine that ran before capt kept runningAt, carried here by continue-as-new, was counted by no one.
      if (!workflowInfo().continuedFromExecutionRunId)
        machineRunning(metricTags, (Date.parse(state.runningAt) - Date.parse(state.createdAt)) / 1000);
    }
  }

  /**
   * The Ready Node with the machine's providerID (running `kubeletVersion`, when given), waited for a chunk at a
   * time. The wait syncs the Node as soon as it is Ready: one activity, not two, per machine.
   */
  async function readyNode(kubeletVersion?: string) {
    for (;;) {
      state.nodeSyncPending = false;
      const node = await waits.waitForNode({
        ...target,
        providerID: state.infrastructure!.providerID,
        timeoutSeconds: nodeStartupChunkSeconds,
        ...(kubeletVersion ? { kubeletVersion } : {}),
        ...nodeFields(),
      });
      if (node) return node;
    }
  }

  async function syncNode(): Promise<void> {
    setStep('SyncingNode', `syncing labels, annotations and taints to Node ${state.nodeRef!.name}`);
    state.nodeSyncPending = false;
    // Health the Node watch reported stays: a sync reads Ready only.
    state.node = {
      ...state.node,
      ...(await core.syncNode({
        ...target,
        nodeName: state.nodeRef!.name,
        ...nodeFields(),
      })),
    };
    state.nodeSynced = true;
    setStep('Running', 'running');
  }

  /**
   * The owner's newer version, taken where the machine runs: the provider changes the machine (the local provider
   * restarts its kubelet on the new version), then the Node must report that version, Ready, with the new set's
   * labels. A deletion meanwhile stops the wait; a provider that cannot leaves the machine Failed for its owner.
   */
  async function updateInPlace(): Promise<void> {
    const request = state.inPlaceUpdate!;
    const scope = new CancellationScope();
    const updating = scope.run(async () => {
      await provider.updateMachineInPlace({
        ...ref,
        role: spec.role,
        version: request.version,
        ...(request.bootstrapConfig
          ? { kubeletExtraArgs: kubeletArgs(request.bootstrapConfig, kubeletArgsFrom(spec.bootstrap.role)) }
          : {}),
      });
      Object.assign(spec, mergeTemplateChange(spec, request.metadata));
      setStep('UpdatingInPlace', `waiting for Node ${state.nodeRef!.name} to run kubelet ${request.version}`);
      const node = await readyNode(request.version);
      state.node = { ...state.node, ...node.readiness };
      state.nodeInfo = node.nodeInfo;
    });
    try {
      await Promise.race([updating, condition(() => state.deletion !== undefined)]);
      if (state.deletion) scope.cancel();
      await updating;
    } catch (err) {
      // Over either way: the machine is being deleted, or the provider could not update it.
      state.inPlaceUpdate = undefined;
      if (isCancellation(err)) return;
      const cause = err instanceof ActivityFailure && err.cause instanceof ApplicationFailure ? err.cause : undefined;
      if (!cause) throw err;
      state.failure = { reason: cause.type ?? 'InPlaceUpdateFailed', message: cause.message };
      return setStep(
        'Failed',
        `in-place update to ${request.version} failed: ${cause.message}; waiting to be deleted or remediated`,
      );
    }
    spec.version = request.version;
    if (request.bootstrapConfig) spec.bootstrap = { ...spec.bootstrap, config: request.bootstrapConfig };
    state.inPlaceUpdates = (state.inPlaceUpdates ?? 0) + 1;
    state.inPlaceHash = request.templateHash;
    state.inPlaceUpdate = undefined;
    // A rebuilt owner adopts the machine as a member of the set it moved to.
    upsertMemo({ templateHash: request.templateHash });
    setStep('Running', `running; updated in place to ${request.version}`);
  }

  function enterGate(gate: DeletionGate, message: string): void {
    state.deletion!.gate = gate;
    state.deletion!.gateStartedAt = nowISO();
    state.deletion!.message = message;
    setStep(gate, message);
  }

  const hooks = (prefix: string) =>
    Object.keys(spec.annotations)
      .filter((a) => a.startsWith(`${prefix}/`))
      .sort();
  const deadline = (startedAt: string, seconds?: number) =>
    seconds ? new Date(startedAt).getTime() + seconds * 1000 : undefined;

  async function waitForHooks(gate: DeletionGate, prefix: string): Promise<void> {
    if (hooks(prefix).length === 0) return;
    enterGate(gate, `waiting for hook annotations to be removed: ${hooks(prefix).join(', ')}`);
    await condition(() => hooks(prefix).length === 0);
  }

  async function drain(): Promise<void> {
    const d = state.deletion!;
    const node = state.nodeRef?.name;
    if (!node || d.clusterDeleting) return;
    if (spec.annotations[excludeNodeDrainingAnnotation] !== undefined) {
      d.drainSkipped = `annotation ${excludeNodeDrainingAnnotation}`;
      return;
    }
    d.drainStartedAt ??= nowISO();
    enterGate(DeletionGate.Drain, `draining node ${node}`);
    const result = await waits.drainNode({
      ...target,
      nodeName: node,
      deadline: deadline(d.drainStartedAt, spec.nodeDrainTimeoutSeconds),
    });
    // Drained with no volume attached, no volume can be left to detach: the volume wait is skipped.
    d.volumesClear = result.done && result.volumesAttached === 0;
    if (!result.done)
      d.drainSkipped = `nodeDrainTimeout ${spec.nodeDrainTimeoutSeconds}s expired with ${result.remaining} pods left: ${result.blocked.join('; ')}`;
  }

  async function waitForVolumes(): Promise<void> {
    const d = state.deletion!;
    const node = state.nodeRef?.name;
    if (!node || d.clusterDeleting || d.volumesClear || spec.annotations[excludeVolumeDetachAnnotation] !== undefined)
      return;
    d.volumeDetachStartedAt ??= nowISO();
    enterGate(DeletionGate.VolumeDetach, `waiting for volumes to detach from node ${node}`);
    await waits.waitForVolumeDetach({
      ...target,
      nodeName: node,
      deadline: deadline(d.volumeDetachStartedAt, spec.nodeVolumeDetachTimeoutSeconds),
    });
  }

  /** The Node to delete: by name once seen, else by providerID (a machine deleted mid-boot may have registered one). */
  async function nodeToDelete(): Promise<{ nodeName: string } | { providerID: string } | undefined> {
    if (state.deletion!.clusterDeleting) return undefined;
    if (state.nodeRef) return { nodeName: state.nodeRef.name };
    const providerID =
      state.infrastructure?.providerID ?? (await provider.describeMachineInfrastructure(ref))?.providerID;
    return providerID ? { providerID } : undefined;
  }

  async function deleteNode(node: { nodeName: string } | { providerID: string } | undefined): Promise<void> {
    if (!node) return;
    const timeout = spec.nodeDeletionTimeoutSeconds ?? 10;
    const what = 'nodeName' in node ? `node ${node.nodeName}` : `the node with providerID ${node.providerID}`;
    enterGate(DeletionGate.Node, `deleting ${what} (nodeDeletionTimeout ${timeout}s)`);
    const bounded = proxyActivities<typeof coreActivities>({
      startToCloseTimeout: `${Math.max(timeout, 1)}s`,
      scheduleToCloseTimeout: `${Math.max(timeout, 1)}s`,
      retry: { initialInterval: '500ms' },
    });
    try {
      await bounded.deleteNode({ ...target, ...node });
    } catch (err) {
      // Cluster API gives up on the Node after nodeDeletionTimeout rather than hold the Machine forever.
      if (!(err instanceof ActivityFailure)) throw err;
    }
  }

  async function runDeletion(): Promise<void> {
    await waitForHooks(DeletionGate.PreDrainHooks, preDrainHookPrefix);
    await drain();
    await waitForVolumes();
    await waitForHooks(DeletionGate.PreTerminateHooks, preTerminateHookPrefix);
    const node = await nodeToDelete();
    enterGate(DeletionGate.Infrastructure, `deleting ${spec.infrastructure.kind} on provider ${spec.provider}`);
    // The bootstrap data lived in the machine's root, gone with its infrastructure.
    await provider.deleteMachineInfrastructure(ref);
    // Counted in this task, which goes on to the Node: the run's last task is retried whole (counting again) when a
    // signal lands during it, as the Node watch's news of that Node's deletion does.
    machineDeleted(metricTags);
    await deleteNode(node);
    enterGate(
      DeletionGate.Done,
      state.deletion!.drainSkipped ? `deleted; drain skipped: ${state.deletion!.drainSkipped}` : 'deleted',
    );
  }

  refresh();
  if (!state.deletion) {
    const scope = new CancellationScope();
    const creating = scope.run(create).catch((err: unknown) => {
      if (isCancellation(err)) return;
      const cause = err instanceof ActivityFailure && err.cause instanceof ApplicationFailure ? err.cause : undefined;
      if (!cause) throw err;
      state.failure = { reason: cause.type ?? 'Failed', message: cause.message };
      setStep('Failed', `failed: ${cause.message}; waiting to be deleted`);
    });
    await Promise.race([creating, condition(() => state.deletion !== undefined)]);
    if (state.deletion) scope.cancel();
    await creating;
    while (!state.deletion) {
      const syncDue = () => state.nodeSyncPending && !!state.nodeRef;
      await condition(
        () =>
          state.deletion !== undefined || syncDue() || !!state.inPlaceUpdate || workflowInfo().continueAsNewSuggested,
      );
      if (state.deletion) break;
      if (state.inPlaceUpdate) await updateInPlace();
      else if (syncDue()) await syncNode();
      else if (workflowInfo().continueAsNewSuggested) {
        await condition(() => allHandlersFinished() && reportsInFlight === 0);
        return continueAsNewOnTargetBuild<typeof machineWorkflow>({ spec, state });
      }
    }
  }
  await runDeletion();
  const final = refresh();
  // The owner must hear of the deletion before this run closes, so this signal is awaited.
  await report(final);
  return final;
}

pinToBuild(machineWorkflow);
