import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { Addons } from '../api/load-addons';
import { resourceSetClusters } from '../addons/resource-set-clusters';
import { selectorText } from '../contract/label-selector';
import {
  resourceKey,
  type AddonResource,
  type ResourceSetModel,
  type ResourceSetStatus,
} from '../contract/resource-set';
import {
  applyResourceSetUpdate,
  deleteResourceSetUpdate,
  resourceSetStatusQuery,
} from '../contract/resource-set-messages';
import { CaptKind, CaptNamespace } from '../contract/search-attributes';
import { ownersTaskQueue } from '../contract/task-queues';
import { resourceSetWorkflowId } from '../contract/workflow-ids';
import { clusterResourceSetWorkflow } from '../../workflows';
import { dueResources } from '../../workflows/addons/resource-set-bindings';
import { resourceSetChangeRefusal } from '../../workflows/addons/resource-set-change';
import { NotFoundError, RejectedError } from './client-errors';
import { queryWithRetry, withServiceRetry } from './query-with-retry';
import { executeUpdate } from './workflow-update';

/** One line of `capt apply` for an addon object, kubectl's words, and for a dry run what each cluster would get. */
export interface AppliedAddon {
  ref: string;
  outcome: 'created' | 'configured' | 'unchanged';
  /** A dry run of a set: per matching cluster, what it would get. */
  clusters?: string[];
}

const setRef = (name: string) => `clusterresourceset.addons.cluster.x-k8s.io/${name}`;
const resourceRef = (r: { kind: string; name: string }) => `${r.kind.toLowerCase()}/${r.name}`;
/** A resource given with its set: new to it, changed, or as the set holds it. */
const resourceOutcome = (r: AddonResource, status?: ResourceSetStatus): AppliedAddon['outcome'] => {
  const hash = status?.resources.find((x) => resourceKey(x) === resourceKey(r))?.hash;
  return !hash ? 'created' : hash === r.hash ? 'unchanged' : 'configured';
};
const sameSet = (a: ResourceSetModel, b: ResourceSetStatus) =>
  JSON.stringify([a.selector, a.strategy, a.resources]) ===
  JSON.stringify([b.selector, b.strategy, b.resources.map(({ kind, name }) => ({ kind, name }))]);

/** capt's ClusterResourceSets: each a workflow (workflows/addons) that holds its resources and bindings. */
export class ResourceSets {
  constructor(private readonly client: Client) {}

  private handle(ns: string, name: string) {
    return this.client.workflow.getHandle<typeof clusterResourceSetWorkflow>(resourceSetWorkflowId(ns, name));
  }

  /** The set's status, or undefined when no workflow of it runs. */
  async status(ns: string, name: string): Promise<ResourceSetStatus | undefined> {
    const handle = this.handle(ns, name);
    try {
      if ((await withServiceRetry(() => handle.describe())).status.name !== 'RUNNING') return undefined;
      return await queryWithRetry(handle, resourceSetStatusQuery);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    }
  }

  async list(namespace?: string): Promise<ResourceSetStatus[]> {
    const query = `CaptKind = "ClusterResourceSet" AND ExecutionStatus = "Running"${namespace ? ` AND CaptNamespace = "${namespace}"` : ''}`;
    const out: ResourceSetStatus[] = [];
    for await (const wf of this.client.workflow.list({ query })) {
      const [, ns, name] = wf.workflowId.split('/') as [string, string, string];
      const status = await this.status(ns, name);
      if (status) out.push(status);
    }
    return out.sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));
  }

  async delete(ns: string, name: string): Promise<ResourceSetStatus> {
    if (!(await this.status(ns, name))) throw new NotFoundError(`clusterresourceset ${ns}/${name} not found`);
    return executeUpdate(this.handle(ns, name), deleteResourceSetUpdate);
  }

  /**
   * Every set of the apply started or sent its change, and every ConfigMap and Secret given alone sent to the
   * running sets that name it. Everything is checked before anything is sent: a set naming a resource capt
   * was never given, a changed selector or strategy, or a resource no set names, refuses the whole apply.
   */
  async apply(addons: Addons, opts: { dryRun?: boolean } = {}): Promise<AppliedAddon[]> {
    const plans = await Promise.all(addons.resourceSets.map((set) => this.planSet(set, addons)));
    const named = (r: AddonResource & { namespace: string }) =>
      addons.resourceSets.some(
        (s) => s.namespace === r.namespace && s.resources.some((ref) => resourceKey(ref) === resourceKey(r)),
      );
    const alone = await Promise.all(
      addons.resources.filter((r) => !named(r)).map(async (r) => ({ resource: r, sets: await this.setsNaming(r) })),
    );
    for (const { resource: r, sets } of alone)
      if (!sets.length)
        throw new RejectedError(
          `${r.kind} ${r.namespace}/${r.name}: no ClusterResourceSet names it; apply it with the ClusterResourceSet whose spec.resources names it`,
        );
    const out: AppliedAddon[] = [];
    for (const plan of plans) {
      if (opts.dryRun)
        out.push({ ...plan.applied, clusters: await this.preview(plan.set, plan.resources, plan.status) });
      else if (!plan.status) await this.start(plan.set, plan.resources);
      else if (plan.applied.outcome !== 'unchanged')
        await executeUpdate(this.handle(plan.set.namespace, plan.set.name), applyResourceSetUpdate, {
          set: plan.set,
          resources: plan.resources,
        });
      if (!opts.dryRun) out.push(plan.applied);
      out.push(...plan.resources.map((r) => ({ ref: resourceRef(r), outcome: resourceOutcome(r, plan.status) })));
    }
    for (const { resource, sets } of alone) {
      const { namespace: _ns, ...content } = resource;
      const changed = sets.some(
        (s) => s.resources.find((x) => resourceKey(x) === resourceKey(resource))?.hash !== resource.hash,
      );
      if (changed && !opts.dryRun)
        for (const s of sets)
          await executeUpdate(this.handle(s.namespace, s.name), applyResourceSetUpdate, { resources: [content] });
      out.push({ ref: resourceRef(resource), outcome: changed ? 'configured' : 'unchanged' });
    }
    return out;
  }

  private async planSet(set: ResourceSetModel, addons: Addons) {
    const given = addons.resources.filter(
      (r) => r.namespace === set.namespace && set.resources.some((ref) => resourceKey(ref) === resourceKey(r)),
    );
    const resources = given.map(({ namespace: _ns, ...content }) => content);
    const status = await this.status(set.namespace, set.name);
    // What the set holds (by hash in its status) and what this apply gives: every name must be among them.
    const known = [...given, ...(status?.resources.filter((r) => r.hash) ?? [])].map(resourceKey);
    const refusal = resourceSetChangeRefusal(status ?? set, status ? set : undefined, known);
    if (refusal) throw new RejectedError(refusal);
    const unchanged =
      status &&
      sameSet(set, status) &&
      resources.every((r) => status.resources.find((x) => resourceKey(x) === resourceKey(r))?.hash === r.hash);
    const outcome: AppliedAddon['outcome'] = !status ? 'created' : unchanged ? 'unchanged' : 'configured';
    return { set, resources, status, applied: { ref: setRef(set.name), outcome } };
  }

  private async start(set: ResourceSetModel, resources: AddonResource[]): Promise<void> {
    try {
      await this.client.workflow.start(clusterResourceSetWorkflow, {
        taskQueue: ownersTaskQueue,
        workflowId: resourceSetWorkflowId(set.namespace, set.name),
        args: [{ set, resources }],
        staticSummary: `ClusterResourceSet ${set.namespace}/${set.name} (${set.strategy})`,
        typedSearchAttributes: [
          { key: CaptKind, value: 'ClusterResourceSet' },
          { key: CaptNamespace, value: set.namespace },
        ],
      });
    } catch (err) {
      // Started meanwhile by another apply: this one's change goes to it.
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      await executeUpdate(this.handle(set.namespace, set.name), applyResourceSetUpdate, { set, resources });
    }
  }

  /** The running sets of the resource's namespace that name it. */
  private async setsNaming(r: AddonResource & { namespace: string }): Promise<ResourceSetStatus[]> {
    return (await this.list(r.namespace)).filter((s) => s.resources.some((x) => resourceKey(x) === resourceKey(r)));
  }

  /** Per cluster the set matches now, what it would get: the resources it is due, with their objects. */
  private async preview(
    set: ResourceSetModel,
    given: AddonResource[],
    status: ResourceSetStatus | undefined,
  ): Promise<string[]> {
    const clusters = await resourceSetClusters(this.client, set.namespace, set.selector);
    if (!clusters.length) return [`no cluster of namespace ${set.namespace} matches ${selectorText(set.selector)}`];
    // What the set would hold: the given content over what it holds, which the status shows by hash only.
    const held = set.resources.flatMap((ref) => {
      const r = given.find((g) => resourceKey(g) === resourceKey(ref));
      const kept = status?.resources.find((s) => resourceKey(s) === resourceKey(ref));
      return r ? [r] : kept?.hash ? [{ ...ref, hash: kept.hash, objects: [] }] : [];
    });
    return clusters.map((c) => {
      const binding = status?.bindings.find((b) => b.cluster === c.name && b.clusterCreatedAt === c.createdAt);
      const due = dueResources(set, held, binding);
      const when = c.initialized ? 'would get' : 'would get, once its control plane is up,';
      if (!due.length) {
        const changed = held.filter((r) =>
          binding?.resources.some((b) => resourceKey(b) === resourceKey(r) && b.hash !== r.hash),
        );
        return changed.length
          ? `cluster ${c.name}: nothing to apply; ${changed.map(resourceKey).join(', ')} changed since applied, and ApplyOnce does not apply again`
          : `cluster ${c.name}: nothing to apply (${set.resources.map(resourceKey).join(', ')} applied as they are)`;
      }
      return `cluster ${c.name} ${when} ${due
        .map((r) => {
          const before = binding?.resources.find((b) => resourceKey(b) === resourceKey(r));
          const why = !before ? 'new' : before.applied ? 'changed since applied' : 'not applied yet';
          const objects = r.objects.map(
            (o) => `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`,
          );
          return `${resourceKey(r)} (${why}${objects.length ? `: ${objects.join(', ')}` : ''})`;
        })
        .join('; ')}`;
    });
  }
}
