import { condition, patched, proxyActivities, setHandler, sleep, workflowInfo } from '@temporalio/workflow';
import type * as coreActivities from '../../activities';
import type { ProviderActivities } from '../../providers/provider-activities';
import { providerTaskQueue } from '../../src/contract/task-queues';
import type { ControlPlaneModel } from '../../src/api/model';
import {
  controlPlaneCleanupHook,
  MachinePhase,
  type MachineSpec,
  type MachineTemplateChange,
} from '../../src/contract/machine';
import { controlPlaneMachineLabels } from '../../src/contract/machine-labels';
import type { ClusterFacts, MachineRecord, OwnerStatus } from '../../src/contract/owner';
import { isRunning } from '../shared/machine-pool';
import { ownerRuntime, type OwnerState } from '../shared/owner-runtime';
import {
  evaluateHealth,
  healthCheckStatus,
  remediationAllowedCondition,
  withRemediations,
} from '../shared/machine-health';
import {
  controlPlaneRemediation,
  remediationHeld,
  remediationStrategy,
  type LastRemediation,
} from './control-plane-remediation';
import type { UnhealthyMachine } from '../../src/contract/health-check';
import { controlPlaneSpecSignal } from '../../src/contract/cluster-messages';
import { recordRevision } from '../shared/revisions';
import { recordUnknownSignals, unknownSignalsField } from '../shared/unknown-signals';
import { msUntilRolloutAfter, rolloutAfterDue } from '../shared/rollout-after';
import { msUntilRepave, repaveField } from '../shared/repave';
import {
  maintenanceField,
  msUntilWindowChanges,
  windowClosed,
  windowWaitStep,
  type AskedWindow,
} from '../shared/maintenance-hold';
import { machinesRemediated } from '../shared/capt-metrics';
import { revisionHash } from '../shared/spec-hash';
import {
  controlPlaneMachineHash,
  controlPlaneRevisionHistoryLimit,
  dueForRenewal,
  outdatedControlPlaneMachine,
  templateHash,
  templateOf,
  type ControlPlaneRevision,
} from './control-plane-revisions';
import { controlPlaneReplicasProblems, controlPlaneSubject } from '../../src/spec-rules/owner-rules';
import { versionChangeProblems } from '../../src/spec-rules/kubernetes-version';
import { refuseProblems } from '../shared/spec-refusal';
import { rebuiltOwnerState, type OwnerRebuild } from '../shared/owner-adoption';
import type { PreflightProblem } from '../../activities/control-plane/preflight';
import { continueAsNewOnTargetBuild, ownerContinueAsNewDue, pinToBuild } from '../shared/build-upgrade';
import { carriedOwnerState, resumedOwnerState, type CarriedOwnerState } from '../shared/packed-records';
import {
  pendingTemplateChange,
  sendTemplateChange,
  templateChange,
  type InPlaceFields,
} from '../shared/in-place-change';
import { controlPlaneInPlace } from './control-plane-in-place';
import { activityRetry } from '../shared/activity-retry';

export interface ControlPlaneInput {
  cluster: ClusterFacts;
  spec: ControlPlaneModel;
  owner: string;
  /** The cluster generation of `spec`. */
  generation?: number;
  /** The cluster was paused when it started this owner. */
  clusterPaused?: boolean;
  /** The cluster rebuilds this owner after its workflow was lost: it adopts the machines it finds first. */
  rebuild?: OwnerRebuild;
  /** Carried across continue-as-new, its records packed. */
  state?: CarriedOwnerState<ControlPlaneState>;
}

export interface ControlPlaneState extends OwnerState {
  spec: ControlPlaneModel;
  initialized: boolean;
  revisions?: ControlPlaneRevision[];
  /** Deleting machines already out of the endpoint and etcd (a few at most; dropped once they are gone). */
  cleaned?: string[];
  /** The last remediation, for remediationStrategy's retries. */
  lastRemediation?: LastRemediation;
  /** Why an unhealthy machine is not remediated (the last machine, etcd quorum, maxRetry, retryPeriod), shown in status. */
  remediationBlocked?: string;
  /** When each machine's apiserver certificate expires, checked hourly while certificatesExpiryDays is set. */
  certificateExpiry?: Record<string, string>;
  certificatesCheckedAt?: string;
  /** Passed preflights, newest last (a few kept): what etcd and the apiservers looked like before each step. */
  preflights?: PreflightRecord[];
  /** A change of the machines' labels, annotations or timeouts not yet passed to every machine. */
  inPlace?: MachineTemplateChange;
  /** The maintenance window's current or next opening, as last asked (see maintenance-hold.ts). */
  window?: AskedWindow;
  /** Machines that refused an in-place update: the rollout replaces them (dropped once they are gone). */
  inPlaceRefused?: string[];
}

export interface PreflightRecord {
  at: string;
  members: string[];
  machines: string[];
  apiserverVersions: Record<string, string>;
}

/** The hash machines are compared by: the template's, and the last restart's time when there was one. */
export const machineHash = (state: ControlPlaneState) =>
  controlPlaneMachineHash(state.spec, state.revisions?.at(-1)?.restartedAt);

/** Histories from before machine template metadata was carried signal no machine when a timeout changes. */
const inPlacePatch = 'kcp-machine-metadata-in-place';
/** Histories from before control-plane machines were updated in place replaced every outdated machine. */
const inPlaceUpdatePatch = 'kcp-in-place-updates';

/**
 * What every machine carries of the spec and takes in place: capt's own labels win over the template's. The
 * cleanup hook is given at creation only, so no change brings it back to a machine its deletion released.
 */
export const controlPlaneMachineFields = (cluster: string, spec: ControlPlaneModel): InPlaceFields => ({
  labels: controlPlaneMachineLabels(cluster, spec.name, spec.labels),
  annotations: spec.annotations ?? {},
  nodeDrainTimeoutSeconds: spec.nodeDrainTimeoutSeconds,
  nodeVolumeDetachTimeoutSeconds: spec.nodeVolumeDetachTimeoutSeconds,
  nodeDeletionTimeoutSeconds: spec.nodeDeletionTimeoutSeconds,
  ...(spec.taints ? { taints: spec.taints } : {}),
});

export function controlPlaneStatus(facts: ClusterFacts, state: ControlPlaneState): OwnerStatus {
  const ready = state.machines.filter(isRunning).length;
  const hash = machineHash(state);
  const updated = state.machines.filter((m) => isRunning(m) && m.templateHash === hash).length;
  const available = state.initialized && ready > 0;
  const checked =
    state.spec.healthCheck && healthCheckStatus(state.spec.healthCheck, state.machines, state.remediations, Date.now());
  const health =
    checked && state.remediationBlocked
      ? { ...checked, remediationAllowed: false, message: state.remediationBlocked }
      : checked;
  return {
    kind: 'KubeadmControlPlane',
    namespace: facts.namespace,
    name: state.spec.name,
    cluster: facts.name,
    version: state.spec.version,
    replicas: state.spec.replicas,
    readyReplicas: ready,
    availableReplicas: ready,
    updatedReplicas: updated,
    paused: !!state.paused,
    rolloutComplete:
      updated === state.spec.replicas &&
      state.machines.length === state.spec.replicas &&
      !state.machines.some((m) => state.replace?.includes(m.name)),
    observedGeneration: state.observedGeneration ?? 1,
    revision: state.revisions?.at(-1)?.revision ?? 1,
    templateHash: templateHash(state.spec),
    ...(state.revisions?.at(-1)?.restartedAt ? { restartedAt: state.revisions.at(-1)!.restartedAt } : {}),
    initialized: state.initialized,
    deleted: !!state.deleting && state.machines.length === 0,
    step: state.step,
    stepReason: state.stepReason ?? 'Starting',
    ready: ready === state.spec.replicas && state.machines.length === state.spec.replicas,
    available,
    failedMachines: state.machines.filter((m) => m.phase === MachinePhase.Failed).length,
    ...(facts.inPlace ? { inPlace: facts.inPlace } : {}),
    conditions: [
      {
        type: 'Available',
        status: available ? 'True' : 'False',
        ...(available ? {} : { reason: 'WaitingForMachines', message: state.step }),
      },
      {
        type: 'MachinesReady',
        status: ready === state.spec.replicas ? 'True' : 'False',
        ...(ready === state.spec.replicas
          ? {}
          : { reason: 'Scaling', message: `${ready}/${state.spec.replicas} machines running` }),
      },
      ...(health ? [remediationAllowedCondition(health)] : []),
    ],
    ...(health ? { healthCheck: health } : {}),
    machines: state.machines,
    sequence: state.reports ?? 0,
    preflights: state.preflights ?? [],
    ...(state.certificateExpiry ? { certificatesExpireAt: state.certificateExpiry } : {}),
    ...repaveField(
      state.spec.machineMaxAgeSeconds,
      state.machines.filter((m) => !m.deleting),
    ),
    ...maintenanceField(state.spec.maintenanceWindow, state),
    ...(state.adoption ? { adoption: state.adoption } : {}),
    ...unknownSignalsField(state.unknownSignals),
  };
}

/**
 * Which machine leaves first, as Cluster API picks: outdated with the delete-machine annotation, any with
 * it, outdated with unhealthy components (from the last preflight), outdated, then all; the oldest among them.
 */
export function scaleDownVictim(
  machines: MachineRecord[],
  outdated: (m: MachineRecord) => boolean,
  unhealthy: string[] = [],
): MachineRecord {
  const live = machines
    .filter((m) => !m.deleting)
    .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.name.localeCompare(b.name));
  // Within each choice, from the failure domain holding the most machines (the sort is stable: oldest first there).
  const held = domainCounts(live);
  const byDomain = (list: MachineRecord[]) =>
    [...list].sort((a, b) => (held.get(b.failureDomain) ?? 0) - (held.get(a.failureDomain) ?? 0));
  const first = (keep: (m: MachineRecord) => boolean) => byDomain(live.filter(keep))[0];
  const marked = (m: MachineRecord) => m.marked;
  return (
    first((m) => outdated(m) && marked(m)) ??
    first(marked) ??
    first((m) => outdated(m) && unhealthy.includes(m.name)) ??
    first(outdated) ??
    first(() => true)!
  );
}

const domainCounts = (machines: MachineRecord[]) => {
  const counts = new Map<string | undefined, number>();
  for (const m of machines) counts.set(m.failureDomain, (counts.get(m.failureDomain) ?? 0) + 1);
  return counts;
};

/**
 * Where a new control-plane machine goes, as Cluster API spreads them: the declared control-plane failure domain
 * holding the fewest machines not leaving, the first declared on a tie; none when the cluster declares none.
 */
export function controlPlaneDomain(domains: string[] | undefined, machines: MachineRecord[]): string | undefined {
  if (!domains?.length) return undefined;
  const held = domainCounts(machines.filter((m) => !m.deleting));
  return domains.reduce((best, d) => ((held.get(d) ?? 0) < (held.get(best) ?? 0) ? d : best), domains[0]!);
}

/** The problems that hold a step back: all of them, except those of the machine about to leave (as Cluster API excludes it). */
export function blockingProblems(problems: PreflightProblem[], leaving?: string): PreflightProblem[] {
  return problems.filter((p) => !leaving || p.machine !== leaving);
}

/**
 * The KubeadmControlPlane (workflow ID `kcp/<namespace>/<name>`): creates the first machine with kubeadm
 * init and the others with join, one at a time; scales down one machine at a time, taking its etcd
 * member out first (leadership moved if it leads).
 */
export async function controlPlaneWorkflow(input: ControlPlaneInput): Promise<OwnerStatus> {
  const facts = input.cluster;
  const state: ControlPlaneState = input.state
    ? resumedOwnerState(input.state)
    : {
        spec: input.spec,
        machines: [],
        initialized: input.rebuild?.previous?.initialized ?? false,
        step: 'starting',
        observedGeneration: input.generation ?? 1,
        clusterPaused: input.clusterPaused,
        ...(input.rebuild ? rebuiltOwnerState(input.rebuild, new Date().toISOString()) : {}),
      };
  // Every activity here takes seconds; a short timeout lets a worker that died mid-step be replaced quickly.
  const core = proxyActivities<typeof coreActivities>({
    startToCloseTimeout: '45s',
    retry: { initialInterval: '2s', maximumInterval: '30s' },
  });
  const provider = proxyActivities<ProviderActivities>({
    taskQueue: providerTaskQueue(facts.provider),
    startToCloseTimeout: '45s',
    heartbeatTimeout: '20s',
    retry: activityRetry,
  });
  const self = workflowInfo().workflowId;

  const record = (cause: string, restartedAt: string | undefined) => {
    const template = templateOf(state.spec);
    const hash = revisionHash(template, restartedAt);
    state.revisions = recordRevision<ControlPlaneRevision, ControlPlaneRevision['template']>(
      state.revisions ?? [],
      {
        hash,
        version: state.spec.version,
        cause,
        at: new Date().toISOString(),
        template,
        restartedAt,
      },
      controlPlaneRevisionHistoryLimit,
    );
  };
  if (!state.revisions) {
    record(input.rebuild ? `rebuilt (${input.rebuild.cause})` : 'created', undefined);
    // Revisions are never numbered down: a rebuilt owner goes on from the lost one's.
    state.revisions![0]!.revision = input.rebuild?.previous?.revision ?? 1;
  }
  /** A new template from the cluster (apply), an undo or a restart: a new revision, rolled out machine by machine. */
  const changeTemplate = (
    template: ControlPlaneRevision['template'],
    cause: string,
    restartedAt: string | undefined,
  ) => {
    state.spec = { ...state.spec, ...template };
    record(cause, restartedAt);
  };
  const subject = controlPlaneSubject(facts.namespace, state.spec.name);
  const {
    refresh,
    observe,
    setStep,
    deleteAllAndFinish,
    checkpoint,
    whileClusterPaused,
    startMachines,
    deleteMachines,
    newNames,
    changes,
    adopt,
    toReplace,
  } = ownerRuntime({
    kind: 'KubeadmControlPlane',
    facts,
    owner: input.owner,
    state,
    status: () => controlPlaneStatus(facts, state),
    validateReplicas: (replicas) =>
      refuseProblems(controlPlaneReplicasProblems(subject, replicas, state.spec.maxSurge)),
    revisions: () => state.revisions ?? [],
    reapply: (target, cause, restartedAt) =>
      changeTemplate((target as ControlPlaneRevision).template, cause, restartedAt),
    validateUndo: (target) =>
      refuseProblems(
        versionChangeProblems(subject, 'spec.version', state.spec.version, target.template.version, { undo: true }),
      ),
    continueAsNew: () =>
      continueAsNewOnTargetBuild<typeof controlPlaneWorkflow>({ ...input, state: carriedOwnerState(state) }),
  });
  setHandler(controlPlaneSpecSignal, ({ spec, cause, generation }) => {
    observe(generation);
    // Everything but replicas (scaled apart) and the name; a new template is a new revision.
    const before = state.spec;
    state.spec = { ...spec, replicas: state.spec.replicas, name: state.spec.name };
    record(cause, state.revisions?.at(-1)?.restartedAt);
    // Labels, annotations and timeouts are no rollout: they reach every machine in place, as Cluster API syncs them.
    state.inPlace = pendingTemplateChange(
      controlPlaneMachineFields(facts.name, before),
      controlPlaneMachineFields(facts.name, state.spec),
      state.inPlace,
    );
    refresh();
  });
  recordUnknownSignals((state.unknownSignals ??= []), refresh);

  const machineSpec = (name: string, init: boolean): MachineSpec => ({
    namespace: facts.namespace,
    name,
    cluster: facts.name,
    provider: facts.provider,
    role: 'control-plane',
    version: state.spec.version,
    bootstrap: {
      role: init ? 'init' : 'join-control-plane',
      config: state.spec.kubeadmConfigSpec,
      controlPlaneEndpoint: facts.endpoint,
      serviceSubnet: facts.serviceSubnet,
      podSubnet: facts.podSubnet,
      serviceDomain: facts.serviceDomain,
    },
    infrastructure: { kind: state.spec.infrastructure.kind, spec: state.spec.infrastructure.spec },
    ...(facts.controlPlaneFailureDomains && {
      failureDomain: controlPlaneDomain(facts.controlPlaneFailureDomains, state.machines),
    }),
    ...controlPlaneMachineFields(facts.name, state.spec),
    annotations: { ...state.spec.annotations, [controlPlaneCleanupHook]: '' },
    owner: self,
    batchedReports: true,
    reportsByUpdate: true,
    statusMemo: true,
    provisionInOneActivity: true,
    bootstrapInProvisioning: true,
  });

  /** Passes the pending in-place change to every machine not leaving, a batch per workflow task. */
  async function sendInPlace(change: MachineTemplateChange): Promise<void> {
    const targets = state.machines.filter((m) => !m.deleting).map((m) => m.name);
    setStep('ChangingInPlace', `changing labels, annotations and timeouts of ${targets.length} machines in place`);
    await sendTemplateChange(facts.namespace, targets, change);
    if (state.inPlace === change) state.inPlace = undefined;
  }

  async function scaleUp(): Promise<void> {
    const init = !state.initialized && state.machines.length === 0;
    const [name] = newNames(state.spec.name, 1) as [string];
    setStep(
      'CreatingMachines',
      `creating control-plane machine ${name} (${init ? 'kubeadm init' : 'kubeadm join --control-plane'})`,
    );
    if (state.lastRemediation && !state.lastRemediation.replacement) state.lastRemediation.replacement = name;
    await startMachines([
      {
        spec: machineSpec(name, init),
        templateHash: machineHash(state),
        summary: `Control-plane machine ${name} of cluster ${facts.name}`,
      },
    ]);
    const machine = () => state.machines.find((m) => m.name === name);
    await condition(
      () => !machine() || isRunning(machine()!) || machine()!.phase === MachinePhase.Failed || !!state.deleting,
    );
    const created = machine();
    if (created?.phase === MachinePhase.Failed)
      setStep(
        'MachineFailed',
        `control-plane machine ${name} failed: ${created.blocker ?? 'see the machine'}; waiting for it to be deleted`,
      );
    if (created && isRunning(created)) state.initialized = true;
  }

  /**
   * Takes a leaving machine out of the endpoint and etcd, then asks for its deletion, which releases its
   * cleanup hook: a scale-down's victim, or a machine someone else deleted (it waits at that hook meanwhile).
   */
  async function cleanUp(victim: MachineRecord): Promise<void> {
    const addresses = state.machines.flatMap((m) => (m.address ? [m.address] : []));
    // The last member stays: there is no etcd left to take it out of.
    const address = addresses.some((a) => a !== victim.address) ? victim.address : undefined;
    // Leaving from now on: status no longer counts it while its endpoint and etcd member go.
    for (const m of state.machines) if (m.name === victim.name) m.deleting = true;
    // Out of the endpoint first, so no client reaches an apiserver whose etcd member is about to go.
    setStep('DetachingEndpoint', `taking ${victim.name} out of the control-plane endpoint`);
    // Returns once the load balancer stopped forwarding to it and drained its kept-alive connections.
    await provider.detachFromEndpoint({ namespace: facts.namespace, cluster: facts.name, name: victim.name });
    // A fixed 3 s wait stood here before the detach waited itself; the timer stays so those histories replay.
    await sleep(1);
    if (address) {
      setStep('RemovingEtcdMember', `removing etcd member ${victim.name} (leadership moves first if it leads)`);
      await core.removeEtcdMember({
        namespace: facts.namespace,
        cluster: facts.name,
        addresses,
        memberName: victim.name,
        memberAddress: address,
      });
    }
    (state.cleaned ??= []).push(victim.name);
    setStep('DeletingMachines', `deleting control-plane machine ${victim.name}`);
    await deleteMachines([victim.name]);
  }

  async function scaleDown(victim: MachineRecord): Promise<void> {
    await cleanUp(victim);
    await condition(() => !state.machines.some((m) => m.name === victim.name));
  }

  /** Running machines on another template that can take the current one where they run (control-plane-in-place.ts). */
  function inPlaceCandidates(outdated: MachineRecord[]): MachineRecord[] {
    if (!facts.inPlace?.controlPlane.length) return [];
    const hash = machineHash(state);
    const to = { template: templateOf(state.spec), restartedAt: state.revisions?.at(-1)?.restartedAt };
    // Expiring certificates and age are renewed only by a new machine.
    const renewedOnlyByReplacement = dueForRenewal(
      state.certificateExpiry ?? {},
      state.spec.certificatesExpiryDays,
      Date.now(),
      state.spec.machineMaxAgeSeconds,
    );
    return outdated.filter((m) => {
      const from = state.revisions?.find((r) => r.hash === m.templateHash);
      return (
        from &&
        m.templateHash !== hash &&
        isRunning(m) &&
        !m.marked &&
        !state.replace?.includes(m.name) &&
        !state.inPlaceRefused?.includes(m.name) &&
        !renewedOnlyByReplacement(m) &&
        controlPlaneInPlace(facts.inPlace, state.spec, from, to).inPlace
      );
    });
  }

  /**
   * Moves one machine to the current template where it runs (its kubelet restarts with new arguments), after a
   * preflight: one at a time, and only while etcd and every apiserver are healthy, as Cluster API's control plane
   * updates in place only where that cannot hurt its health. It counts as unavailable until it reports the update
   * done; one that refuses is replaced by the rollout instead, and one that fails stays Failed for remediation.
   */
  async function updateInPlace(machine: MachineRecord): Promise<void> {
    if (!(await preflight(false))) return;
    const hash = machineHash(state);
    const revision = state.revisions?.at(-1)?.revision;
    setStep('UpdatingInPlace', `updating control-plane machine ${machine.name} in place (revision ${revision})`);
    const since = machine.runningSince ? { runningSince: machine.runningSince } : {};
    const mark = (change: (m: MachineRecord) => MachineRecord) => {
      state.machines = state.machines.map((m) => (m.name === machine.name ? change(m) : m));
      refresh();
    };
    mark(({ runningSince: _since, ...m }) => ({
      ...m,
      templateHash: hash,
      version: state.spec.version,
      updating: true,
    }));
    const fields = controlPlaneMachineFields(facts.name, state.spec);
    const answer = await core.requestMachineInPlaceUpdate({
      namespace: facts.namespace,
      name: machine.name,
      request: {
        version: state.spec.version,
        templateHash: hash,
        metadata: templateChange(fields, fields),
        bootstrapConfig: state.spec.kubeadmConfigSpec,
      },
    });
    if (answer === 'refused') {
      (state.inPlaceRefused ??= []).push(machine.name);
      const { templateHash, version } = machine;
      return mark(({ updating: _u, ...m }) => ({ ...m, templateHash, version, ...since }));
    }
    // Its kubelet's arguments come from the configuration that did not change: it is on the new template as it runs.
    if (answer === 'unchanged') return mark(({ updating: _u, ...m }) => ({ ...m, ...since }));
    const current = () => state.machines.find((m) => m.name === machine.name);
    await condition(() => !current()?.updating || current()!.phase === MachinePhase.Failed || !!state.deleting);
  }

  /**
   * Preflight before a step. A scale-down picks its machine here (unhealthy outdated ones first), and that
   * machine's own problems do not hold it back. Undefined (after saying why and waiting) when it fails.
   */
  async function preflight(down: boolean): Promise<{ victim?: MachineRecord } | undefined> {
    const pick = (unhealthy: string[]) => (down ? scaleDownVictim(state.machines, isOutdated, unhealthy) : undefined);
    const machines = state.machines.filter((m) => !m.deleting && m.address);
    if (!state.initialized || machines.length === 0) return { victim: pick([]) };
    const result = await core.controlPlanePreflight({
      namespace: facts.namespace,
      cluster: facts.name,
      machines: machines.map((m) => ({ name: m.name, address: m.address!, version: m.version })),
    });
    const victim = pick([...new Set(result.problems.flatMap((p) => (p.machine ? [p.machine] : [])))]);
    const blocking = blockingProblems(result.problems, victim?.name);
    if (!blocking.length) {
      state.preflights = [
        ...(state.preflights ?? []),
        {
          at: new Date().toISOString(),
          members: result.members,
          machines: result.machines,
          apiserverVersions: result.apiserverVersions,
        },
      ].slice(-5);
      return { victim };
    }
    setStep('PreflightFailed', `preflight failed, retrying in 10s: ${blocking.map((p) => p.message).join('; ')}`);
    await condition(() => !!state.deleting, '10s');
    return undefined;
  }

  /**
   * Outdated: another template, a certificate expiring within certificatesExpiryDays, past the machine max age, or
   * asked to be replaced (replaceMachinesUpdate).
   */
  const isOutdated = (m: MachineRecord) =>
    outdatedControlPlaneMachine(
      machineHash(state),
      state.certificateExpiry ?? {},
      state.spec.certificatesExpiryDays,
      Date.now(),
      state.spec.machineMaxAgeSeconds,
    )(m) || !!state.replace?.includes(m.name);
  const certificateCheckEveryMs = 3_600_000;
  async function checkCertificates(): Promise<void> {
    const running = state.machines.filter((m) => isRunning(m) && m.address);
    const checkedAt = state.certificatesCheckedAt ? Date.parse(state.certificatesCheckedAt) : 0;
    const unknown = running.some((m) => !state.certificateExpiry?.[m.name]);
    if (
      !state.spec.certificatesExpiryDays ||
      !running.length ||
      (!unknown && Date.now() - checkedAt < certificateCheckEveryMs)
    )
      return;
    state.certificateExpiry = await core.controlPlaneCertificateExpiry({
      machines: running.map((m) => ({ name: m.name, address: m.address! })),
    });
    state.certificatesCheckedAt = new Date().toISOString();
    refresh();
  }

  /** As Cluster API's control plane remediates: out of the endpoint and etcd, deleted, then replaced by the next pass's scale-up. */
  async function remediate(unhealthy: UnhealthyMachine, retries: number): Promise<void> {
    const now = Date.now();
    state.lastRemediation = { machine: unhealthy.machine, at: new Date(now).toISOString(), retries };
    state.remediations = withRemediations(state.remediations, [unhealthy], now);
    machinesRemediated(
      { namespace: facts.namespace, cluster: facts.name, owner: state.spec.name, kind: 'KubeadmControlPlane' },
      [unhealthy],
    );
    setStep(
      'Remediating',
      `MachineHealthCheck ${state.spec.healthCheck!.name}: remediating ${unhealthy.machine} (${unhealthy.message}, since ${unhealthy.since})${retries ? `, retry ${retries}` : ''}`,
    );
    await cleanUp(state.machines.find((m) => m.name === unhealthy.machine)!);
  }
  /** When a pending health timeout or retryPeriod runs out: the loop looks again then. */
  const remediationWakeMs = (
    healthAt: number | undefined,
    decision: ReturnType<typeof controlPlaneRemediation> | undefined,
    now: number,
  ) => {
    const times = [healthAt, decision && 'waitUntilMs' in decision ? decision.waitUntilMs : undefined].filter(
      (t): t is number => t !== undefined,
    );
    return times.length ? Math.max(1000, Math.min(...times) - now + 50) : undefined;
  };

  /** A machine deleted by someone else, waiting at its cleanup hook for the endpoint and etcd to let it go. */
  const deletedElsewhere = () => state.machines.find((m) => m.deleting && !(state.cleaned ?? []).includes(m.name));

  refresh();
  await adopt(() => state.spec.version);
  // A control plane that adopted a running machine has initialised its cluster (kubeadm init ran once).
  state.initialized ||= state.machines.some(isRunning);
  while (!state.deleting) {
    await checkpoint();
    if (await whileClusterPaused()) continue;
    if (state.inPlace && patched(inPlacePatch)) {
      await sendInPlace(state.inPlace);
      continue;
    }
    await checkCertificates();
    if (rolloutAfterDue(state.spec.rolloutAfter, state.revisions?.at(-1)?.restartedAt, state.machines, Date.now())) {
      record(`rolloutAfter ${state.spec.rolloutAfter}`, state.spec.rolloutAfter);
      refresh();
    }
    state.cleaned = (state.cleaned ?? []).filter((name) => state.machines.some((m) => m.name === name));
    toReplace(); // forgets the machines asked to be replaced that are gone
    if (state.inPlaceRefused)
      state.inPlaceRefused = state.inPlaceRefused.filter((name) => state.machines.some((m) => m.name === name));
    if (deletedElsewhere()) {
      await cleanUp(deletedElsewhere()!);
      continue;
    }
    // One health verdict per pass: the remediation decision and the wake-up time both come from it.
    const now = Date.now();
    const check = state.spec.healthCheck;
    const verdict = check && evaluateHealth(check, state.machines, now);
    const remediation =
      verdict &&
      controlPlaneRemediation(verdict, state.machines, remediationStrategy(state.spec), state.lastRemediation, now);
    state.remediationBlocked = remediationHeld(remediation);
    if (remediation && 'remediate' in remediation) {
      await remediate(remediation.remediate, remediation.retries);
      continue;
    }
    const live = state.machines.filter((m) => !m.deleting);
    // Paused, or held for a closed maintenance window: scaling still applies, outdated machines stay.
    const due = state.paused ? [] : live.filter(isOutdated);
    const wait = await windowClosed(state, state.spec.maintenanceWindow, due.length, now);
    const outdated = wait ? [] : due;
    // Those that take the current template where they run are updated, one at a time, once the count is right.
    const candidates = inPlaceCandidates(outdated);
    const inPlace = candidates.length && patched(inPlaceUpdatePatch) ? candidates : [];
    const replaced = outdated.filter((m) => !inPlace.includes(m));
    const needsStep = live.length !== state.spec.replicas || replaced.length > 0;
    // A rollout: with maxSurge 1 a new machine joins before an outdated one leaves; with 0, the other way round.
    const up =
      live.length < state.spec.replicas ||
      (live.length === state.spec.replicas && replaced.length > 0 && state.spec.maxSurge === 1);
    const settled = (m: MachineRecord) => m.phase === MachinePhase.Running || m.phase === MachinePhase.Failed;
    if (!live.every(settled)) {
      await condition(
        () =>
          !!state.deleting ||
          state.machines.filter((m) => !m.deleting).every(settled) ||
          !!deletedElsewhere() ||
          ownerContinueAsNewDue(),
      );
    } else if (inPlace.length && live.length === state.spec.replicas) {
      await updateInPlace(inPlace[0]!);
    } else if (needsStep) {
      const checked = await preflight(!up);
      if (checked?.victim) await scaleDown(checked.victim);
      else if (checked) await scaleUp();
    } else {
      const waiting = live.filter((m) => m.templateHash !== machineHash(state)).length;
      if (state.remediationBlocked) setStep('RemediationBlocked', state.remediationBlocked);
      else if (wait) setStep('WaitingForMaintenanceWindow', windowWaitStep(wait));
      else
        setStep(
          waiting ? 'Paused' : 'Stable',
          `${live.length} control-plane machines running${waiting ? ` (paused: ${waiting} on an older revision wait for resume)` : ''}`,
        );
      const hash = machineHash(state);
      const paused = state.paused;
      const spec = state.spec;
      const seen = changes();
      // A machine's report (its Node's health among it) may make a remediation due.
      const moved = () =>
        !!state.deleting ||
        state.spec !== spec ||
        changes() !== seen ||
        machineHash(state) !== hash ||
        state.paused !== paused ||
        ownerContinueAsNewDue();
      const wakes = [
        msUntilRolloutAfter(state.spec.rolloutAfter, now),
        msUntilRepave(live, state.spec.machineMaxAgeSeconds, now),
        msUntilWindowChanges(state, now),
        state.spec.certificatesExpiryDays ? certificateCheckEveryMs : undefined,
        remediationWakeMs(verdict?.nextAtMs, remediation, now),
      ].filter((t): t is number => t !== undefined);
      await (wakes.length ? condition(moved, Math.min(...wakes)) : condition(moved));
    }
  }
  return deleteAllAndFinish('control-plane machine');
}

pinToBuild(controlPlaneWorkflow);
