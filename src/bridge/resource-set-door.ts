import type { Logger } from 'pino';
import { stringify } from 'yaml';
import { loadManifestsWithTopologies } from '../api/load-manifests';
import { ManifestError } from '../api/manifest-error';
import { NotFoundError, RejectedError } from '../client/client-errors';
import type { ResourceSets } from '../client/resource-sets';
import type { Condition } from '../contract/machine';
import type { ResourceKind, ResourceSetStatus } from '../contract/resource-set';
import { asManifest, clusterNameLabel, manifestHash } from './cluster-documents';
import { apiConditions, type ApiCondition } from './cluster-status-out';
import type { ApiObject, ManagementClient } from './management-client';

/** Cluster API's finalizer on a ClusterResourceSet: the object goes once its workflow was told to go. */
export const resourceSetFinalizer = 'addons.cluster.x-k8s.io';
/** On a ClusterResourceSet object: the hash of the set and its resources last handed to its workflow. */
export const appliedResourcesAnnotation = 'capt.cluster.x-k8s.io/applied-resources';

const bindingVersion = 'addons.cluster.x-k8s.io/v1beta2';
const retryRefusedMs = 30_000;

/** A ConfigMap or Secret of the management API as a manifest document: what `capt apply -f` would be given. */
function dataDocument(kind: ResourceKind, o: Record<string, unknown>) {
  const { name, namespace } = (o as { metadata: { name: string; namespace: string } }).metadata;
  const { data, binaryData, type } = o as { data?: unknown; binaryData?: unknown; type?: string };
  return {
    apiVersion: 'v1',
    kind,
    metadata: { name, namespace },
    ...(type ? { type } : {}),
    ...(data ? { data } : {}),
    ...(binaryData ? { binaryData } : {}),
  };
}

/**
 * ClusterResourceSets written to the management API, carried out by capt's set workflows (workflows/addons) as
 * `capt apply -f` of the set with the ConfigMaps and Secrets it names: a set whose documents changed (its spec, or
 * a resource's data) goes to its workflow again, a refusal is written on its ResourcesApplied condition, a deleted
 * set's workflow is told to go, and each cluster's ClusterResourceSetBinding is written from the sets' bindings.
 */
export class ResourceSetDoor {
  /**
   * Per set, the documents last refused and why: tried again when they change, or after retryRefusedMs (a refusal
   * may pass: the set's earlier workflow still finishing its deletion, a resource another set named).
   */
  private readonly refused = new Map<string, { hash: string; message: string; at: number }>();

  constructor(private readonly o: { api: ManagementClient; sets: ResourceSets; log: Logger }) {}

  async pass(objects: { ClusterResourceSet?: ApiObject[]; ClusterResourceSetBinding?: ApiObject[] }): Promise<void> {
    const statuses: ResourceSetStatus[] = [];
    const live = new Set<string>();
    let failed = false;
    for (const set of objects.ClusterResourceSet ?? []) {
      const key = `${set.metadata.namespace}/${set.metadata.name}`;
      live.add(key);
      const status = await this.reconcile(set).catch((err: Error) => {
        this.o.log.warn({ err, clusterResourceSet: key }, 'bridge: ClusterResourceSet');
        failed = true;
        return undefined;
      });
      if (status) statuses.push(status);
    }
    for (const key of this.refused.keys()) if (!live.has(key)) this.refused.delete(key);
    // Bindings are written from every set's status: with one missing they would drop its clusters for a pass.
    if (!failed)
      await this.writeBindings(objects.ClusterResourceSet ?? [], statuses, objects.ClusterResourceSetBinding ?? []);
  }

  /** The set handed to its workflow when its documents changed; its status written back. */
  private async reconcile(set: ApiObject): Promise<ResourceSetStatus | undefined> {
    const { namespace, name } = set.metadata;
    const finalizers = set.metadata.finalizers ?? [];
    if (set.metadata.deletionTimestamp) {
      if (!finalizers.includes(resourceSetFinalizer)) return undefined;
      await this.o.sets.delete(namespace, name).catch((err: unknown) => {
        if (!(err instanceof NotFoundError)) throw err;
      });
      await this.o.api.setFinalizers(
        set,
        finalizers.filter((f) => f !== resourceSetFinalizer),
      );
      return undefined;
    }
    // The finalizer first, so a deletion from now on reaches the workflow.
    if (!finalizers.includes(resourceSetFinalizer)) {
      await this.o.api.setFinalizers(set, [...finalizers, resourceSetFinalizer]);
      return undefined;
    }
    const text = await this.documents(set);
    const hash = manifestHash(text);
    const key = `${namespace}/${name}`;
    const applied = set.metadata.annotations?.[appliedResourcesAnnotation] === hash;
    const before = this.refused.get(key);
    if (!applied && (before?.hash !== hash || Date.now() - before.at > retryRefusedMs)) {
      try {
        const { addons } = loadManifestsWithTopologies(
          [{ file: `management API, ClusterResourceSet ${key}`, text }],
          {},
        );
        await this.o.sets.apply(addons);
        await this.o.api.annotate(set, appliedResourcesAnnotation, hash);
        this.refused.delete(key);
      } catch (err) {
        if (!(err instanceof ManifestError || err instanceof RejectedError)) throw err;
        this.refused.set(key, { hash, message: err.message, at: Date.now() });
        this.o.log.info({ clusterResourceSet: key, refusal: err.message }, 'bridge: ClusterResourceSet refused');
      }
    }
    const status = await this.o.sets.status(namespace, name);
    const refusal = this.refused.get(key);
    const current = applied || (!!status && !refusal);
    const conditions: Condition[] = refusal
      ? [{ type: 'ResourcesApplied', status: 'False', reason: 'NotApplied', message: refusal.message }]
      : (status?.conditions ?? []);
    const previous = set.status as { conditions?: ApiCondition[]; observedGeneration?: number } | undefined;
    const generation = set.metadata.generation ?? 1;
    await this.o.api.patchStatusIfChanged(set, {
      conditions: apiConditions(
        conditions,
        previous?.conditions,
        current ? generation : undefined,
        new Date().toISOString(),
      ),
      ...(current ? { observedGeneration: generation } : {}),
    });
    return status;
  }

  /** The set and the ConfigMaps and Secrets it names that exist, as one manifest: what its workflow is given. */
  private async documents(set: ApiObject): Promise<string> {
    const refs = ((set.spec as { resources?: { kind: ResourceKind; name: string }[] }).resources ?? []).slice(0, 100);
    const found = await Promise.all(
      refs.map((r) => this.o.api.core.findDataObject(r.kind, set.metadata.namespace, r.name)),
    );
    const data = refs.flatMap((r, i) => {
      const o = found[i];
      return o ? [dataDocument(r.kind, o as unknown as Record<string, unknown>)] : [];
    });
    return [asManifest(set), ...data].map((d) => stringify(d)).join('---\n');
  }

  /**
   * One ClusterResourceSetBinding per bound cluster (named as the cluster, as Cluster API names them), listing
   * what each set applied to it; one no set binds any more is deleted.
   */
  private async writeBindings(sets: ApiObject[], statuses: ResourceSetStatus[], existing: ApiObject[]): Promise<void> {
    const wanted = new Map<string, ApiObject>();
    for (const status of statuses) {
      const owner = sets.find((s) => s.metadata.namespace === status.namespace && s.metadata.name === status.name);
      if (!owner?.metadata.uid) continue;
      for (const b of status.bindings) {
        const key = `${status.namespace}/${b.cluster}`;
        const object = wanted.get(key) ?? {
          apiVersion: bindingVersion,
          kind: 'ClusterResourceSetBinding',
          metadata: {
            name: b.cluster,
            namespace: status.namespace,
            labels: { [clusterNameLabel]: b.cluster },
            ownerReferences: [],
          },
          spec: { clusterName: b.cluster, bindings: [] as unknown[] },
        };
        object.metadata.ownerReferences!.push({
          apiVersion: bindingVersion,
          kind: 'ClusterResourceSet',
          name: status.name,
          uid: owner.metadata.uid,
        });
        (object.spec!.bindings as unknown[]).push({
          clusterResourceSetName: status.name,
          resources: b.resources.map(({ kind, name, hash, applied, lastAppliedTime }) => ({
            kind,
            name,
            hash,
            applied,
            lastAppliedTime,
          })),
        });
        wanted.set(key, object);
      }
    }
    for (const [key, object] of wanted) {
      const found = existing.find((e) => `${e.metadata.namespace}/${e.metadata.name}` === key);
      if (!found) await this.o.api.create(object);
      else if (
        JSON.stringify([found.spec, found.metadata.ownerReferences]) !==
        JSON.stringify([object.spec, object.metadata.ownerReferences])
      )
        await this.o.api.replace({
          ...object,
          metadata: { ...object.metadata, resourceVersion: found.metadata.resourceVersion },
        });
    }
    for (const e of existing)
      if (!wanted.has(`${e.metadata.namespace}/${e.metadata.name}`))
        await this.o.api.delete('ClusterResourceSetBinding', e.metadata.namespace, e.metadata.name);
  }
}
