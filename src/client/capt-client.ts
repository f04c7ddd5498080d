import { generateKeyPairSync, randomBytes } from 'node:crypto';
import {
  Client,
  Connection,
  ServiceError,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowNotFoundError,
  type UpdateDefinition,
  type WorkflowHandle,
} from '@temporalio/client';
import type { ClusterModel } from '../api/model';
import { captDataConverter } from '../codec/data-converter';
import { temporalAddress, temporalNamespace, temporalTLS } from '../config/temporal-connection';
import { kubeconfig } from '../pki/kubeconfig';
import {
  appliedModelQuery,
  applyClusterUpdate,
  clusterStatusQuery,
  deleteClusterUpdate,
  issueKubeconfigUpdate,
  repairClusterUpdate,
  rolloutHistoryQuery,
  rolloutPauseUpdate,
  rolloutRestartUpdate,
  replaceMachinesUpdate,
  rolloutUndoUpdate,
  scaleUpdate,
} from '../contract/cluster-messages';
import type { RepairReport } from '../contract/owner-recovery';
import {
  creationDiff,
  diffClusterModels,
  type ApplyOutcome,
  type ClusterDiff,
} from '../../workflows/cluster/cluster-diff';
import {
  previewApply,
  type UpgradeStep,
  type ClusterPreview,
  type OwnerPreview,
  type RunningOwner,
} from '../../workflows/cluster/apply-preview';
import { clusterChangeProblems } from '../spec-rules/cluster-rules';
import { formatSpecProblems, problem } from '../spec-rules/spec-problem';
import { newerMinor } from '../spec-rules/kubernetes-version';
import { controlPlaneSubject } from '../spec-rules/owner-rules';
import { upgradePlan } from '../contract/upgrade-plan';
import type { Revision } from '../contract/owner';
import {
  changeMachineUpdate,
  deleteMachineUpdate,
  machineStatusQuery,
  reportedStatusMemo,
} from '../contract/machine-messages';
import { annotated, annotationsProblem, type AnnotationChange } from './machine-annotations';
import { CaptCluster, captAttributes } from '../contract/search-attributes';
import { coreTaskQueue, ownersTaskQueue } from '../contract/task-queues';
import { certificateRows, soonestFirst, type CertificateRow } from './certificate-rows';
import { waitingToStart, type ClusterStatus, type ClusterView, type PendingChange } from '../contract/cluster';
import type { MachineStatus } from '../contract/machine';
import type { MachineOwnerKind, OwnerStatus, OwnerSummary } from '../contract/owner';
import {
  certificateInventoryWorkflowId,
  clusterHealthWorkflowId,
  clusterWorkflowId,
  machineWorkflowId,
  ownerWorkflowId,
} from '../contract/workflow-ids';
import { certificateInventoryWorkflow, clusterHealthWorkflow, clusterWorkflow } from '../../workflows';
import type { OwnerCheckIntervals } from '../../workflows/cluster/cluster-workflow';
import {
  machinePoolHealth,
  type ClusterHealth,
  type ClusterHealthInput,
  type MachinePoolHealth,
} from '../contract/cluster-health';
import { ownerStatusAllPages } from './owner-status-pages';
import { waitForClose } from './wait-for-close';
import { queryWithRetry, withServiceRetry } from './query-with-retry';
import { executeUpdate } from './workflow-update';
import { NotFoundError, RejectedError } from './client-errors';

/** capt's programmatic client: everything the CLI does, as calls over Temporal. */
export interface ConnectOptions {
  address?: string;
  namespace?: string;
}

export interface AppliedObject {
  ref: string;
  /** kubectl's words; `pruned`: a MachineDeployment the manifest no longer has is deleted. */
  outcome: ApplyOutcome | 'pruned';
  /** A dry run: what the change would do to the owner's machines. */
  preview?: OwnerPreview;
  /** A dry run of a ClusterClass cluster's version change: the upgrade plan, step by step. */
  upgradePlan?: UpgradeStep[];
}

/** Each object of a cluster with its outcome, as kubectl names them, and with the dry run's preview. */
function appliedObjects(model: ClusterModel, diff: ClusterDiff, preview?: ClusterPreview): AppliedObject[] {
  const machineDeployment = (name: string) => `machinedeployment.cluster.x-k8s.io/${name}`;
  return [
    {
      ref: `cluster.cluster.x-k8s.io/${model.name}`,
      outcome: diff.cluster,
      ...(preview?.upgradePlan ? { upgradePlan: preview.upgradePlan } : {}),
    },
    {
      ref: `kubeadmcontrolplane.controlplane.cluster.x-k8s.io/${model.controlPlane.name}`,
      outcome: diff.controlPlane.outcome,
      preview: preview?.controlPlane,
    },
    ...diff.machineDeployments.map((c) => ({
      ref: machineDeployment(c.name),
      outcome: c.outcome,
      preview: preview?.machineDeployments[c.name],
    })),
    ...diff.removed.map((name) => ({
      ref: machineDeployment(name),
      outcome: 'pruned' as const,
      preview: preview?.removed[name],
    })),
    ...diff.machines.map((c) => ({ ref: `machine.cluster.x-k8s.io/${c.name}`, outcome: c.outcome })),
    ...diff.removedMachines.map((name) => ({ ref: `machine.cluster.x-k8s.io/${name}`, outcome: 'pruned' as const })),
  ];
}

/** One cluster's health check in a list: its report, or why there is none. */
export interface ClusterHealthOutcome {
  namespace: string;
  name: string;
  health?: ClusterHealth;
  error?: string;
}

export { NotFoundError, RejectedError } from './client-errors';

/** The kinds that own machines, as the CLI names them. */
export type OwnerKind = 'machinedeployment' | 'kubeadmcontrolplane';

export class CaptClient {
  private constructor(
    readonly client: Client,
    private readonly connection: Connection,
  ) {}

  static async connect(opts: ConnectOptions = {}): Promise<CaptClient> {
    const address = opts.address ?? temporalAddress();
    // First, so a host without the payload key is told how to get one before anything is sent.
    const dataConverter = captDataConverter();
    const connection = await Connection.connect({ address, connectTimeout: '5s', tls: temporalTLS() }).catch(
      (err: Error) => {
        throw new Error(
          `cannot reach Temporal at ${address} (${err.message}); start it with \`capt dev start\` or set TEMPORAL_ADDRESS`,
          { cause: err },
        );
      },
    );
    return new CaptClient(
      new Client({ connection, namespace: opts.namespace ?? temporalNamespace(), dataConverter }),
      connection,
    );
  }

  async close(): Promise<void> {
    await this.connection.close();
  }

  private cluster(ns: string, name: string): WorkflowHandle<typeof clusterWorkflow> {
    return this.client.workflow.getHandle(clusterWorkflowId(ns, name));
  }

  /**
   * Creates each cluster's workflow, or sends the model to the running one; reports per object as kubectl
   * does. A dry run sends nothing: it validates as the workflow would, and says what each owner's machines
   * would go through. `ownerChecks` shortens a new cluster's owner checks, for tests only. With
   * `kubernetesVersions` (what the provider can run here), a chained upgrade's steps are checked against them.
   */
  async apply(
    models: ClusterModel[],
    opts: { dryRun?: boolean; ownerChecks?: OwnerCheckIntervals; kubernetesVersions?: string[] } = {},
  ): Promise<AppliedObject[]> {
    const out: AppliedObject[] = [];
    for (const model of models) {
      const handle = this.cluster(model.namespace, model.name);
      const created = opts.dryRun ? !(await this.running(handle)) : await this.startCluster(model, opts.ownerChecks);
      if (created) {
        const diff = creationDiff(model);
        out.push(
          ...appliedObjects(
            model,
            diff,
            opts.dryRun ? previewApply(undefined, model, diff, { machineDeployments: {} }, Date.now()) : undefined,
          ),
        );
        continue;
      }
      const description = await handle.describe();
      if (description.status.name !== 'RUNNING')
        throw new RejectedError(
          `cluster ${model.namespace}/${model.name} is finishing its deletion; apply again once \`capt get clusters\` no longer lists it`,
        );
      // The same diff the workflow's apply handler acts on, so what is printed is what is done.
      const applied = await queryWithRetry(handle, appliedModelQuery);
      if (opts.kubernetesVersions && model.topology?.kubernetesVersions)
        await this.checkChainedSteps(handle, model, opts.kubernetesVersions);
      const diff = diffClusterModels(applied.model, model, applied.running);
      if (opts.dryRun) {
        out.push(...appliedObjects(model, diff, await this.preview(handle, applied.model, model, diff)));
        continue;
      }
      await executeUpdate(handle, applyClusterUpdate, model);
      out.push(...appliedObjects(model, diff));
    }
    return out;
  }

  /** A chained upgrade gives the control plane each step's version: each must be one the provider runs here. */
  private async checkChainedSteps(handle: WorkflowHandle, next: ClusterModel, available: string[]): Promise<void> {
    const running = (await queryWithRetry(handle, clusterStatusQuery)).controlPlane?.version;
    const plan =
      running && upgradePlan(next.topology?.kubernetesVersions, next.controlPlane.version, running, undefined);
    const missing = plan && !('refused' in plan) ? plan.controlPlane.filter((v) => !available.includes(v)) : [];
    if (!missing.length) return;
    const subject = { kind: 'Cluster', namespace: next.namespace, name: next.name };
    const message = `the upgrade from ${running} steps through ${missing.join(', ')}, which the ${next.provider} provider cannot run here`;
    const hint = `drop ${missing.join(', ')} from the ClusterClass's spec.kubernetesVersions for a version of the same minor it runs (${available.join(', ')}), or add ${missing.length === 1 ? 'it' : 'them'} to the provider`;
    throw new RejectedError(
      formatSpecProblems([problem(subject, 'spec.topology.version', message, hint, 'UnsupportedVersion')]),
    );
  }

  /** Starts a new cluster's workflow; false when one is running already. */
  private async startCluster(model: ClusterModel, ownerChecks?: OwnerCheckIntervals): Promise<boolean> {
    try {
      await this.client.workflow.start(clusterWorkflow, {
        taskQueue: ownersTaskQueue,
        workflowId: clusterWorkflowId(model.namespace, model.name),
        args: [{ model, workersByAvailability: true, ...(ownerChecks ? { ownerChecks } : {}) }],
        staticSummary: `Cluster ${model.namespace}/${model.name} (${model.provider}, ${model.controlPlane.version})`,
        typedSearchAttributes: captAttributes({
          kind: 'Cluster',
          namespace: model.namespace,
          cluster: model.name,
          phase: 'Provisioning',
          version: model.controlPlane.version,
          provider: model.provider,
        }),
      });
      return true;
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) return false;
      throw err;
    }
  }

  /** The cluster's workflow runs (a closed one is replaced by the next apply, as startCluster does). */
  private async running(handle: WorkflowHandle): Promise<boolean> {
    try {
      return (await withServiceRetry(() => handle.describe())).status.name === 'RUNNING';
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return false;
      throw err;
    }
  }

  /**
   * What applying `next` would do, read without changing anything: refused as the workflow's validator
   * would refuse it, then each owner's machines against the plan's own rules.
   */
  private async preview(
    handle: WorkflowHandle,
    previous: ClusterModel,
    next: ClusterModel,
    diff: ClusterDiff,
  ): Promise<ClusterPreview> {
    const summary = await queryWithRetry(handle, clusterStatusQuery);
    const problems = clusterChangeProblems(
      previous,
      next,
      summary.controlPlane?.version,
      summary.upgradePlan?.controlPlane,
    );
    if (problems.length) throw new RejectedError(formatSpecProblems(problems));
    const names = [...diff.machineDeployments.map((c) => c.name), ...diff.removed];
    const [controlPlane, ...machineDeployments] = await Promise.all([
      this.runningOwner('KubeadmControlPlane', next.namespace, next.controlPlane.name),
      ...names.map((name) => this.runningOwner('MachineDeployment', next.namespace, name)),
    ]);
    return previewApply(
      previous,
      next,
      diff,
      { controlPlane, machineDeployments: Object.fromEntries(names.map((name, i) => [name, machineDeployments[i]])) },
      Date.now(),
    );
  }

  /** An owner's machines and current revision; undefined when it has not started. */
  private async runningOwner(
    kind: MachineOwnerKind,
    namespace: string,
    name: string,
  ): Promise<RunningOwner | undefined> {
    const handle = this.ownerHandle({ kind, namespace, name });
    try {
      const [status, history] = await Promise.all([
        ownerStatusAllPages(handle),
        queryWithRetry(handle, rolloutHistoryQuery),
      ]);
      return {
        version: status.version,
        replicas: status.replicas,
        paused: status.paused,
        machines: status.machines,
        restartedAt: history.at(-1)?.restartedAt,
        certificatesExpireAt: status.certificatesExpireAt,
        ...(status.inPlace ? { inPlace: status.inPlace } : {}),
      };
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    }
  }

  /** The cluster with each owner's own status (the cluster workflow keeps only their summaries). */
  async clusterStatus(ns: string, name: string): Promise<ClusterView> {
    return this.clusterView(await this.clusterSummary(ns, name));
  }

  /** The cluster workflow's own status: each owner as a summary, small however many machines it has. */
  async clusterSummary(ns: string, name: string): Promise<ClusterStatus> {
    return queryWithRetry(await this.runningCluster(ns, name), clusterStatusQuery);
  }

  /** The handle of a cluster whose workflow runs, or NotFoundError naming how to list clusters. */
  private async runningCluster(ns: string, name: string): Promise<WorkflowHandle<typeof clusterWorkflow>> {
    const handle = this.cluster(ns, name);
    const description = await withServiceRetry(() => handle.describe()).catch((err: Error) => {
      throw new NotFoundError(
        `cluster ${ns}/${name} not found (${err.message.split('\n')[0]}); \`capt get clusters -A\` lists them`,
      );
    });
    if (description.status.name !== 'RUNNING')
      throw new NotFoundError(
        `cluster ${ns}/${name} not found: it was deleted at ${description.closeTime?.toISOString()}`,
      );
    return handle;
  }

  /** A cluster's summary with its owners' full status (their machine records) read in. */
  async clusterView(status: ClusterStatus): Promise<ClusterView> {
    // An owner that has finished (deleted) answers no query: its summary is all there is.
    const full = (s: OwnerSummary) => ownerStatusAllPages(this.ownerHandle(s)).catch(() => undefined);
    const [controlPlane, ...machineDeployments] = await Promise.all(
      [status.controlPlane, ...status.machineDeployments].map((s) => (s ? full(s) : undefined)),
    );
    return { ...status, controlPlane, machineDeployments: machineDeployments.filter((s): s is OwnerStatus => !!s) };
  }

  private ownerHandle(s: Pick<OwnerSummary, 'kind' | 'namespace' | 'name'>): WorkflowHandle {
    return this.client.workflow.getHandle(ownerWorkflowId(s.kind, s.namespace, s.name));
  }

  private async listRunning(kind: string, namespace?: string): Promise<string[]> {
    const query = `CaptKind = "${kind}" AND ExecutionStatus = "Running"${namespace ? ` AND CaptNamespace = "${namespace}"` : ''}`;
    const ids: string[] = [];
    for await (const wf of this.client.workflow.list({ query })) ids.push(wf.workflowId);
    return ids.sort();
  }

  async listClusters(namespace?: string): Promise<ClusterView[]> {
    const ids = await this.listRunning('Cluster', namespace);
    return Promise.all(
      ids.map(async (id) =>
        this.clusterView(await queryWithRetry(this.client.workflow.getHandle(id), clusterStatusQuery)),
      ),
    );
  }

  /** Machines' full statuses, from their own workflows, a bounded number at a time. */
  async machineStatuses(ns: string, names: string[]): Promise<MachineStatus[]> {
    const out: MachineStatus[] = [];
    for (let i = 0; i < names.length; i += 50) {
      const batch = await Promise.all(
        names
          .slice(i, i + 50)
          .map((n) =>
            queryWithRetry(this.client.workflow.getHandle(machineWorkflowId(ns, n)), machineStatusQuery).catch(
              () => undefined,
            ),
          ),
      );
      out.push(...batch.filter((m): m is MachineStatus => !!m));
    }
    return out;
  }

  /**
   * A machine's status as of its report `sequence` or a later one, from its memo: a describe, which the server
   * answers without the machine's worker (busy while it builds hundreds, it answered queries a second late).
   * Undefined when there is no such machine, or while its memo still shows an earlier report: the report reaches
   * the owner within the task that writes the memo, before the task completes. A machine of an earlier build
   * keeps no memo: its workflow is queried.
   */
  async reportedMachineStatus(ns: string, name: string, sequence: number): Promise<MachineStatus | undefined> {
    const handle = this.client.workflow.getHandle(machineWorkflowId(ns, name));
    const description = await withServiceRetry(() => handle.describe()).catch(() => undefined);
    if (!description) return undefined;
    const reported = description.memo?.[reportedStatusMemo] as MachineStatus | undefined;
    if (reported) return reported.sequence >= sequence ? reported : undefined;
    return queryWithRetry(handle, machineStatusQuery).catch(() => undefined);
  }

  async listMachines(namespace?: string): Promise<MachineStatus[]> {
    const ids = await this.listRunning('Machine', namespace);
    const out: MachineStatus[] = [];
    for (let i = 0; i < ids.length; i += 50)
      out.push(
        ...(await Promise.all(
          ids.slice(i, i + 50).map((id) => queryWithRetry(this.client.workflow.getHandle(id), machineStatusQuery)),
        )),
      );
    return out;
  }

  async listOwners(kind: 'MachineDeployment' | 'KubeadmControlPlane', namespace?: string): Promise<OwnerStatus[]> {
    const ids = await this.listRunning(kind, namespace);
    return Promise.all(ids.map((id) => ownerStatusAllPages(this.client.workflow.getHandle(id))));
  }

  async scale(kind: OwnerKind, ns: string, name: string, replicas: number): Promise<OwnerStatus> {
    return this.ownerUpdate(kind, ns, name, scaleUpdate, replicas);
  }

  /** An update to an owner; when its workflow is lost (terminated, failed), the error says so and how to rebuild it. */
  private async ownerUpdate<Ret, Args extends unknown[]>(
    kind: OwnerKind,
    ns: string,
    name: string,
    definition: UpdateDefinition<Ret, Args>,
    ...args: Args
  ): Promise<Ret> {
    const owner = this.owner(kind, ns, name);
    try {
      return await executeUpdate(owner, definition, ...args);
    } catch (err) {
      if (err instanceof RejectedError) throw err;
      const description = await owner.describe().catch(() => undefined);
      if (!description || description.status.name === 'RUNNING') throw err;
      const cluster = description.typedSearchAttributes.get(CaptCluster) ?? 'CLUSTER';
      throw new NotFoundError(
        `${kind} ${ns}/${name}: its workflow ${owner.workflowId} is ${description.status.name}, not running; \`capt repair cluster ${cluster} -n ${ns}\` rebuilds it and adopts its machines`,
      );
    }
  }

  /**
   * Checks every owner workflow of a cluster and rebuilds the lost ones (terminated, failed, timed out),
   * which adopt the machines they find; a dry run only reports.
   */
  async repairCluster(ns: string, name: string, opts: { dryRun?: boolean } = {}): Promise<RepairReport> {
    return executeUpdate(await this.runningCluster(ns, name), repairClusterUpdate, { dryRun: !!opts.dryRun });
  }

  /** Waits until each owner `repairCluster` rebuilt has adopted its machines; their statuses then. */
  async waitForAdoption(report: RepairReport, timeoutMs: number): Promise<OwnerStatus[]> {
    const deadline = Date.now() + timeoutMs;
    const rebuilt = report.owners.filter((o) => o.action === 'rebuilt');
    for (;;) {
      const statuses = await Promise.all(
        rebuilt.map((o) => ownerStatusAllPages(this.ownerHandle({ ...o, namespace: report.namespace }))),
      );
      if (statuses.every((s) => s.adoption?.complete)) return statuses;
      if (Date.now() > deadline)
        throw new Error(
          `the rebuilt owners of cluster ${report.namespace}/${report.cluster} are still adopting machines after ${Math.round(timeoutMs / 1000)}s; \`capt describe cluster ${report.cluster}\` follows them`,
        );
      await new Promise((r) => setTimeout(r, 1000));
    }
  }

  private owner(kind: OwnerKind, ns: string, name: string): WorkflowHandle {
    return this.ownerHandle({
      kind: kind === 'machinedeployment' ? 'MachineDeployment' : 'KubeadmControlPlane',
      namespace: ns,
      name,
    });
  }

  /** A query to a control plane or MachineDeployment, its absence said as kubectl says it. */
  private async ownerQuery<T>(
    kind: OwnerKind,
    ns: string,
    name: string,
    read: (handle: WorkflowHandle) => Promise<T>,
  ): Promise<T> {
    return read(this.owner(kind, ns, name)).catch((err: Error) => {
      // A service that kept failing (a query timing out on a busy worker) is no proof the owner is gone.
      if (err instanceof ServiceError && !(err instanceof WorkflowNotFoundError))
        throw new Error(`${kind} ${ns}/${name} did not answer: ${err.message} (${String(err.cause?.message)})`, {
          cause: err,
        });
      throw new NotFoundError(
        `${kind} ${ns}/${name} not found (${err.message.split('\n')[0]}); \`capt get ${kind}s -A\` lists them`,
      );
    });
  }

  async ownerStatus(kind: OwnerKind, ns: string, name: string): Promise<OwnerStatus> {
    return this.ownerQuery(kind, ns, name, ownerStatusAllPages);
  }

  /**
   * An owner's status with what its cluster says of its last applied change: still held back, not yet
   * received, or rolling out. The rollout is done only when the owner's is complete and nothing is pending.
   */
  async rolloutState(
    kind: OwnerKind,
    ns: string,
    name: string,
  ): Promise<{ status: OwnerStatus; pending?: PendingChange; done: boolean }> {
    const status = await this.ownerStatus(kind, ns, name);
    const pending = (await this.clusterSummary(ns, status.cluster)).pending.find(
      (p) => p.kind === status.kind && p.name === name,
    );
    return { status, pending, done: ownerComplete(status) && !(pending && waitingToStart(pending)) };
  }

  /** Revisions of a control plane's or MachineDeployment's machine template, oldest first. */
  async rolloutHistory(kind: OwnerKind, ns: string, name: string): Promise<Revision[]> {
    return this.ownerQuery(kind, ns, name, (handle) => queryWithRetry(handle, rolloutHistoryQuery));
  }

  /** Rolls back to a revision (the previous one by default), as a new revision. */
  async rolloutUndo(kind: OwnerKind, ns: string, name: string, toRevision?: number): Promise<OwnerStatus> {
    const owner = await this.ownerStatus(kind, ns, name);
    if (owner.kind === 'KubeadmControlPlane') await this.refuseControlPlaneBelowWorkers(owner, toRevision);
    return this.ownerUpdate(kind, ns, name, rolloutUndoUpdate, { toRevision });
  }

  /**
   * A control plane's undo may step back a minor version, but never below a version its workers run or roll out
   * to: kubelets may not be newer than the apiserver. (The control plane's workflow does not know its workers.)
   */
  private async refuseControlPlaneBelowWorkers(owner: OwnerStatus, toRevision?: number): Promise<void> {
    const { namespace, name } = owner;
    const revisions = await this.rolloutHistory('kubeadmcontrolplane', namespace, name);
    const target = toRevision === undefined ? revisions.at(-2) : revisions.find((r) => r.revision === toRevision);
    if (!target) return;
    const cluster = await this.clusterSummary(namespace, owner.cluster);
    const workers = [
      ...cluster.machineDeployments.map((md) => ({ what: `MachineDeployment ${md.name}`, version: md.version })),
      ...cluster.machines.map((m) => ({ what: `Machine ${m.name}`, version: m.version })),
    ].filter((w) => newerMinor(w.version, target.version));
    if (!workers.length) return;
    const newer = workers.map((w) => `${w.what} at ${w.version}`).join(', ');
    throw new RejectedError(
      formatSpecProblems([
        problem(
          controlPlaneSubject(namespace, name),
          'spec.version',
          `undo to revision ${target.revision} would take the control plane to ${target.version}, older than its workers (${newer}); kubelets may not be newer than the apiserver`,
          `undo the workers first (capt rollout undo machinedeployment/NAME), or pick a revision at their version with --to-revision`,
          'UnsupportedVersion',
        ),
      ]),
    );
  }

  /** Pause (true) or resume (false) replacing machines; scaling goes on either way. */
  async rolloutPause(kind: OwnerKind, ns: string, name: string, paused: boolean): Promise<OwnerStatus> {
    await this.ownerStatus(kind, ns, name);
    return this.ownerUpdate(kind, ns, name, rolloutPauseUpdate, { paused });
  }

  /** Replaces every machine with a new one of the same template. */
  async rolloutRestart(kind: OwnerKind, ns: string, name: string): Promise<OwnerStatus> {
    await this.ownerStatus(kind, ns, name);
    return this.ownerUpdate(kind, ns, name, rolloutRestartUpdate);
  }

  /** Replaces the machines named, and no other, with new ones of the current template within the rollout's bounds. */
  async replaceMachines(kind: OwnerKind, ns: string, name: string, machines: string[]): Promise<OwnerStatus> {
    await this.ownerStatus(kind, ns, name);
    return this.ownerUpdate(kind, ns, name, replaceMachinesUpdate, { names: machines });
  }

  /** A machine's workflow and its status, or NotFoundError naming how to list machines. */
  private async machine(ns: string, name: string): Promise<{ handle: WorkflowHandle; status: MachineStatus }> {
    const handle = this.client.workflow.getHandle(machineWorkflowId(ns, name));
    const status = await queryWithRetry(handle, machineStatusQuery).catch((err: Error) => {
      throw new NotFoundError(
        `machine ${ns}/${name} not found (${err.message.split('\n')[0]}); \`capt get machines\` lists them`,
      );
    });
    return { handle, status };
  }

  /** Deletes one machine (drained first); its owner replaces it if it still wants the replicas. */
  async deleteMachine(ns: string, name: string): Promise<MachineStatus> {
    return executeUpdate((await this.machine(ns, name)).handle, deleteMachineUpdate, {});
  }

  /**
   * Sets and removes annotations of one machine, as `kubectl annotate machine` does; the rest stay, and so do
   * these when its owner's template changes. A replacement starts from the template again.
   */
  async annotateMachine(ns: string, name: string, change: AnnotationChange): Promise<MachineStatus> {
    const { handle, status } = await this.machine(ns, name);
    const next = annotated(status.annotations, change);
    const invalid = annotationsProblem(next);
    if (invalid) throw new RejectedError(`machine ${ns}/${name}: ${invalid}`);
    return executeUpdate(handle, changeMachineUpdate, { annotations: next });
  }

  async deleteCluster(ns: string, name: string): Promise<ClusterStatus> {
    return executeUpdate(this.cluster(ns, name), deleteClusterUpdate);
  }

  /** Waits for the cluster's workflow to finish (deletion), reporting progress. */
  async waitForDeletion(
    ns: string,
    name: string,
    onProgress: (s: ClusterView) => void,
    timeoutMs: number,
  ): Promise<void> {
    const handle = this.cluster(ns, name);
    const closed = await waitForClose(handle, Date.now() + timeoutMs, async () => {
      const status = await queryWithRetry(handle, clusterStatusQuery).catch(() => undefined);
      if (status) onProgress(await this.clusterView(status));
    });
    if (closed) return;
    throw new Error(
      `cluster ${ns}/${name} was not deleted within ${Math.round(timeoutMs / 1000)}s; it goes on in the background (\`capt describe cluster ${name}\`)`,
    );
  }

  /** Waits until the cluster is Provisioned with every replica running, or a machine Failed. */
  async waitForCluster(
    ns: string,
    name: string,
    onProgress: (s: ClusterView) => void,
    timeoutMs: number,
  ): Promise<ClusterView> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const status = await this.clusterStatus(ns, name);
      onProgress(status);
      if (clusterComplete(status) || status.phase === 'Failed') return status;
      if (Date.now() > deadline)
        throw new Error(
          `cluster ${ns}/${name} is not ready after ${Math.round(timeoutMs / 1000)}s; it goes on in the background (\`capt describe cluster ${name}\`). Waiting on: ${waitingOn(status)}`,
        );
      await new Promise((r) => setTimeout(r, 1000));
    }
  }

  /**
   * The cluster's health, checked by a worker (which reads the cluster's credentials from its workflow) in a workflow of its
   * own: etcd members against the control plane's Running machines, every component of those machines,
   * the Nodes and the kube-system pods.
   */
  async clusterHealth(ns: string, name: string): Promise<ClusterHealth> {
    return this.healthOf(await this.clusterSummary(ns, name));
  }

  /** Every cluster's health (of one namespace, or all), a few checks at a time; a check that fails is reported as its error. */
  async clustersHealth(namespace?: string): Promise<ClusterHealthOutcome[]> {
    const ids = await this.listRunning('Cluster', namespace);
    const out: ClusterHealthOutcome[] = [];
    for (let i = 0; i < ids.length; i += 5) {
      out.push(
        ...(await Promise.all(
          ids.slice(i, i + 5).map(async (id) => {
            const summary = await queryWithRetry(this.client.workflow.getHandle(id), clusterStatusQuery);
            const { namespace: ns, name } = summary;
            return this.healthOf(summary).then(
              (health) => ({ namespace: ns, name, health }),
              (err: Error) => ({ namespace: ns, name, error: err.message }),
            );
          }),
        )),
      );
    }
    return out;
  }

  /**
   * Runs one check of a cluster from its summary and its owners' records: the control plane's machines
   * (etcd members must be these) and, for every owner, its machines with a Node against those asked for.
   */
  private async healthOf(summary: ClusterStatus): Promise<ClusterHealth> {
    const { namespace: ns, name } = summary;
    const owners = [...(summary.controlPlane ? [summary.controlPlane] : []), ...summary.machineDeployments].filter(
      (o) => !o.deleted,
    );
    const statuses = await Promise.all(
      owners.map((o): Promise<{ owner: OwnerSummary; status?: OwnerStatus; error?: string }> =>
        ownerStatusAllPages(this.ownerHandle(o)).then(
          (status) => ({ owner: o, status }),
          (err: Error) => ({ owner: o, error: err.message }),
        ),
      ),
    );
    const now = Date.now();
    const standalone = summary.machines.filter((m) => !m.deleting);
    const machinePools: MachinePoolHealth[] = [
      ...statuses.map(({ owner, status, error }) =>
        status ? machinePoolHealth(status, now) : { ...machinePoolHealth({ ...owner, machines: [] }, now), error },
      ),
      ...(summary.machines.length
        ? [machinePoolHealth({ kind: 'Machine', name, replicas: standalone.length, machines: summary.machines }, now)]
        : []),
    ];
    const controlPlane = statuses.find((s) => s.owner.kind === 'KubeadmControlPlane')?.status;
    const machines = (controlPlane?.machines ?? []).filter((m) => m.phase === 'Running' && !m.deleting);
    const input: ClusterHealthInput = {
      namespace: ns,
      cluster: name,
      endpoint: summary.endpoint,
      controlPlaneMachines: machines.map((m) => ({ name: m.name, address: m.address })),
      machinePools,
    };
    try {
      return await this.client.workflow.execute(clusterHealthWorkflow, {
        taskQueue: coreTaskQueue,
        workflowId: clusterHealthWorkflowId(ns, name, requestId()),
        args: [input],
        staticSummary: `health check of cluster ${ns}/${name}`,
        workflowExecutionTimeout: '5 minutes',
      });
    } catch (err) {
      throw workflowCause(err, `health check of cluster ${ns}/${name}`);
    }
  }

  /**
   * Every certificate of `cluster`, or of the clusters in `namespace` (all when undefined), soonest to expire first: each cluster's
   * CAs and admin certificate, and what each machine holds, read by workers a page of machines at a time.
   */
  async certificates(namespace?: string, cluster?: string): Promise<CertificateRow[]> {
    const rows: CertificateRow[] = [];
    const request = requestId();
    const summaries = cluster
      ? [await this.clusterSummary(namespace ?? 'default', cluster)]
      : await Promise.all(
          (await this.listRunning('Cluster', namespace)).map((id) =>
            queryWithRetry(this.client.workflow.getHandle(id), clusterStatusQuery),
          ),
        );
    for (const { namespace: ns, name, provider } of summaries) {
      let after: string | undefined;
      let page = 0;
      do {
        const got = await this.client.workflow
          .execute(certificateInventoryWorkflow, {
            taskQueue: coreTaskQueue,
            workflowId: certificateInventoryWorkflowId(ns, name, `${request}-${page++}`),
            args: [{ namespace: ns, cluster: name, provider, ...(after !== undefined ? { after } : {}) }],
            staticSummary: `certificates of cluster ${ns}/${name}`,
            workflowExecutionTimeout: '5 minutes',
          })
          .catch((err: unknown) => {
            throw workflowCause(err, `reading the certificates of cluster ${ns}/${name}`);
          });
        rows.push(...certificateRows(ns, name, got));
        after = got.next;
      } while (after !== undefined);
    }
    return rows.sort(soonestFirst);
  }

  /**
   * An admin kubeconfig for the cluster, from any host that reaches Temporal: the key pair is made here, the
   * cluster's workers certify its public half, and the private key is never sent anywhere.
   */
  async kubeconfig(ns: string, name: string): Promise<string> {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const issued = await executeUpdate(await this.runningCluster(ns, name), issueKubeconfigUpdate, { publicKey: pem });
    return kubeconfig({
      ...issued,
      credentials: { cert: issued.cert, key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() },
    });
  }
}

/**
 * A one-off workflow's own failure (the cluster's secrets unreadable, say) says what is wrong; its wrapper says
 * only that the workflow failed.
 */
function workflowCause(err: unknown, what: string): unknown {
  return err instanceof WorkflowFailedError && err.cause
    ? new Error(`${what} failed: ${err.cause.message}`, { cause: err })
    : err;
}

/** Tells one request's workflows (a health check, a certificate inventory) from another's: time and a random tail. */
const requestId = () => `${new Date().toISOString().replace(/[-:.]/g, '')}-${randomBytes(3).toString('hex')}`;

/**
 * Every applied change carried out: the owners have received the newest generation, none is held back,
 * and every owner runs all its replicas on its current template.
 */
export function clusterComplete(status: ClusterView): boolean {
  const owners = [status.controlPlane, ...status.machineDeployments];
  return (
    status.phase === 'Provisioned' &&
    status.observedGeneration === status.generation &&
    status.pending.length === 0 &&
    owners.every((o) => !!o && ownerComplete(o)) &&
    status.machines.every((m) => m.phase === 'Running')
  );
}

/** All replicas running on the owner's current template, none beyond them. */
const ownerComplete = (o: OwnerStatus) =>
  o.rolloutComplete && o.readyReplicas === o.replicas && o.machines.length === o.replicas;

/** What a cluster that is not ready waits on: changes held back or not received, each owner's step and a few of its machines that are not Running. */
function waitingOn(status: ClusterView): string {
  const held = status.pending.filter(waitingToStart).map((p) => `${p.kind} ${p.name}: ${p.message}`);
  return (
    [
      ...held,
      ...[status.controlPlane, ...status.machineDeployments]
        .filter((o): o is OwnerStatus => !!o)
        .map((o) => {
          const pending = o.machines.filter((m) => m.phase !== 'Running');
          const shown = pending.slice(0, 5).map((m) => `${m.name} ${m.phase}${m.blocker ? ` (${m.blocker})` : ''}`);
          return `${o.name}: ${o.step}${shown.length ? `; ${shown.join(', ')}${pending.length > shown.length ? ` and ${pending.length - shown.length} more` : ''}` : ''}`;
        }),
    ].join(' | ') || status.step
  );
}

/** The failed machines of a cluster and why, one per line (empty when none failed). */
export function failedMachines(status: ClusterView): string {
  return [status.controlPlane, ...status.machineDeployments]
    .flatMap((o) => o?.machines ?? [])
    .filter((m) => m.phase === 'Failed')
    .map((m) => `machine ${m.name} failed: ${m.blocker ?? 'see its workflow'}`)
    .join('\n');
}
