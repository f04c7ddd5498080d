import { isDeepStrictEqual } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import {
  loadManifests,
  loadManifestsWithTopologies,
  type MadeObject,
  type ManifestSource,
} from '../api/load-manifests';
import { ManifestError } from '../api/manifest-error';
import type { ClusterModel } from '../api/model';
import { mirrorMachines, releaseMachineObject } from './machine-mirror';
import { ResourceSetDoor } from './resource-set-door';
import { ResourceSets } from '../client/resource-sets';
import { writeBackTemplates } from './template-write-back';
import { controlPlaneUndone, onlyHeldForControlPlane, writeBackControlPlane } from './control-plane-write-back';
import { keepTopologyObjects, madeAsCarriedOut, writeTopologyObjects } from './topology-objects';
import { topologyReplicasPatch } from './topology-write-back';
import { MirroredReports } from './mirrored-reports';
import { machinesOverQuota } from './machine-quota';
import type { ObjectCache } from './object-cache';
import { healthCheckObjectStatus } from './health-check-status-out';
import { machineHealthConditions } from './machine-health-out';
import { bridgeLeaseRef, type BridgeLease } from './bridge-lease';
import { controllerRef, labelSelector } from './machine-objects';
import { NotFoundError, RejectedError, type CaptClient } from '../client/capt-client';
import {
  clusterManifest,
  clusterNameLabel,
  clusterObjects,
  hasTopology,
  madeMachineObjects,
  manifestHash,
  ownedByCluster,
  sharedByClusters,
  readObjects,
  type ObjectsByKind,
} from './cluster-documents';
import { asksDeletionFirst, marksInFlight } from './machine-annotations-door';
import {
  clusterObjectStatus,
  ownerObjectStatus,
  topologyReconciledType,
  type ApiCondition,
  type Observation,
  type PreviousStatus,
} from './cluster-status-out';
import { controlPlaneMachineLabels, machineDeploymentMachineLabels } from '../contract/machine-labels';
import type { OwnerStatus } from '../contract/owner';
import type { ClusterStatus, ClusterView } from '../contract/cluster';
import { managedResources, type ApiObject, type ManagedKind, type ManagementClient } from './management-client';

/** Cluster API's finalizer on a Cluster: the object goes only once its cluster workflow has deleted everything. */
export const clusterFinalizer = 'cluster.cluster.x-k8s.io';
/** The type Cluster API gives the Secrets it writes for a cluster. */
const clusterSecretType = 'cluster.x-k8s.io/secret';
/** On a Cluster object: the hash of the manifest (it and its objects) last handed to the cluster workflow. */
export const appliedManifestAnnotation = 'capt.cluster.x-k8s.io/applied-manifest';

export interface BridgeOptions {
  api: ManagementClient;
  client: CaptClient;
  log: Logger;
  /** The Kubernetes versions the local provider can run here, as `capt apply` checks them; undefined: not checked. */
  kubernetesVersions?: string[];
  /** Several bridges may run: only the holder of this lease passes. Without one, this bridge always does. */
  lease?: BridgeLease;
  /** The objects as watched; without it (or while it is not listed) each pass lists them. */
  cache?: ObjectCache;
}

/**
 * How long a cluster's owners' full status (every machine record) is reused while its summary is unchanged. An
 * owner is the hottest workflow of a rollout, and its records the largest answer capt gives: read at every pass
 * (every 2-5 s once passes were bounded), they slowed a 1000-machine rollout by a quarter.
 */
const ownersReadMs = 5_000;

/**
 * The management API's door to capt: each pass reads Cluster API's objects, hands a Cluster whose manifest
 * changed to its workflow exactly as `capt apply` would, deletes a Cluster being deleted through its
 * workflow, and writes each Cluster's status from its workflow's. Between passes it keeps only what a restarted
 * bridge finds again (the refusals, the reports Machine objects show), so it can stop and start at any time.
 */
export class Bridge {
  /** Per cluster, the manifest last refused and why: it is not tried again until it changes. */
  private readonly refused = new Map<string, { hash: string; message: string }>();
  private readonly reports = new MirroredReports();
  /** Per cluster, the view last read and its summary: see ownersReadMs. */
  private readonly views = new Map<string, { summary: ClusterStatus; view: ClusterView; at: number }>();
  /** What each topology Cluster's applied manifest was made into, by the manifest's hash (a render takes 0.2 s). */
  private readonly made = new Map<string, { hash: string; made: MadeObject[] }>();
  /** Each Cluster's applied manifest as loaded, by its hash: the write-back looks at it every pass. */
  private readonly loaded = new Map<string, { hash: string; model: ClusterModel }>();

  /** ClusterResourceSets, handed to their own workflows. */
  private readonly resourceSets: ResourceSetDoor;

  constructor(private readonly o: BridgeOptions) {
    this.resourceSets = new ResourceSetDoor({ api: o.api, sets: new ResourceSets(o.client.client), log: o.log });
  }

  /** Whether this bridge holds the lease, as last renewed; undefined before the first try. */
  private leading?: boolean;

  /** Set by a pass that ran out of time for some machines' objects: the next pass starts without waiting. */
  private machinesLeft = false;
  /** The interval between passes, as run() was given it (2 s by default): also the least age of a view read again. */
  private intervalMs = 2_000;

  /**
   * Passes every `intervalMs` until `signal` aborts, while this bridge holds the lease (when it has one); a failed
   * pass is logged and the next one tries again. After a pass that left machines' objects behind, the next starts
   * at once: a scale-up of hundreds waited an interval per few dozen machines (status lag p95 15 s at 1000).
   */
  async run(intervalMs: number, signal: AbortSignal): Promise<void> {
    this.intervalMs = intervalMs;
    const lease = this.o.lease;
    const kept = lease ? this.keepLease(lease, intervalMs, signal) : undefined;
    while (!signal.aborted) {
      this.machinesLeft = false;
      if (!lease || this.leading)
        await this.pass().catch((err: Error) => this.o.log.warn({ err }, 'bridge pass failed'));
      if (!this.machinesLeft) await sleep(intervalMs, undefined, { signal }).catch(() => undefined);
    }
    await kept;
  }

  /**
   * Renews the lease every `intervalMs`, apart from the passes (a long pass must not let it lapse), and lets it go
   * on stop. A renewal that fails stops the passes: two bridges must not both act on a cluster.
   */
  private async keepLease(lease: BridgeLease, intervalMs: number, signal: AbortSignal): Promise<void> {
    const where = `Lease ${bridgeLeaseRef.namespace}/${bridgeLeaseRef.name}`;
    while (!signal.aborted) {
      const leading = await lease.hold().catch((err: Error) => {
        this.o.log.warn({ err }, `bridge: could not renew ${where}`);
        return false;
      });
      if (leading !== this.leading)
        this.o.log.info(
          leading ? `bridge: leading (holds ${where})` : `bridge: standing by (another bridge holds ${where})`,
        );
      this.leading = leading;
      await sleep(intervalMs, undefined, { signal }).catch(() => undefined);
    }
    await lease.release().catch((err: Error) => this.o.log.warn({ err }, `bridge: could not release ${where}`));
  }

  async pass(): Promise<void> {
    const cached = await this.o.cache?.objects();
    if (cached === 'behind') return;
    const objects = cached ?? (await readObjects(this.o.api, Object.keys(managedResources) as ManagedKind[]));
    this.reports.keepOnly(objects.Machine ?? []);
    const clusters = new Set((objects.Cluster ?? []).map((c) => `${c.metadata.namespace}/${c.metadata.name}`));
    for (const key of this.views.keys()) if (!clusters.has(key)) this.views.delete(key);
    for (const key of this.made.keys()) if (!clusters.has(key)) this.made.delete(key);
    for (const key of this.loaded.keys()) if (!clusters.has(key)) this.loaded.delete(key);
    const secrets = new Set(await this.o.api.core.secretNames(`type=${clusterSecretType}`));
    for (const cluster of objects.Cluster ?? [])
      await this.reconcile(cluster, objects, secrets).catch((err: Error) =>
        this.o.log.warn({ err, cluster: `${cluster.metadata.namespace}/${cluster.metadata.name}` }, 'bridge: cluster'),
      );
    await this.resourceSets.pass(objects);
  }

  private async reconcile(cluster: ApiObject, objects: ObjectsByKind, secrets: Set<string>): Promise<void> {
    const { namespace, name } = cluster.metadata;
    const finalizers = cluster.metadata.finalizers ?? [];
    if (cluster.metadata.deletionTimestamp) return this.deleting(cluster, objects);
    // The finalizer first, so a deletion from now on waits for the workflow.
    if (!finalizers.includes(clusterFinalizer))
      return this.o.api.setFinalizers(cluster, [...finalizers, clusterFinalizer]);
    const members = clusterObjects(cluster, objects);
    // A topology's objects are made controlled by the Cluster; its class and the class's templates are not the Cluster's.
    if (!hasTopology(cluster)) await this.adopt(cluster, members);
    const manifest = clusterManifest(cluster, members);
    const hash = manifestHash(manifest.text);
    const key = `${namespace}/${name}`;
    const applied = cluster.metadata.annotations?.[appliedManifestAnnotation] === hash;
    const held = applied ? [] : await this.marksInFlight(cluster, objects);
    if (held.length)
      this.o.log.info({ cluster: key, machines: held }, 'bridge: change held until delete-machine marks reach owners');
    // Over the machines quota is looked at again every pass: the quota may be raised, or other clusters shrink.
    let overQuota: string | undefined;
    if (!applied && held.length === 0 && this.refused.get(key)?.hash !== hash) {
      try {
        const { clusters: models, made } = loadManifestsWithTopologies([manifest], {}, this.o.kubernetesVersions);
        overQuota = await machinesOverQuota(this.o.api.core, models[0]!, objects);
        if (!overQuota) {
          await this.o.client.apply(models, { kubernetesVersions: this.o.kubernetesVersions });
          // Before the manifest is noted as applied: a bridge stopped in between applies it again (a no-op) and writes them.
          if (hasTopology(cluster)) {
            // Its MachineDeployments keep the version they run until the next pass knows which ones are held.
            const last = this.views.get(key)?.view;
            const running = (md: string) => last?.machineDeployments.find((m) => m.name === md)?.version;
            await writeTopologyObjects(this.o.api, cluster, madeAsCarriedOut(made, running), objects);
            this.made.set(key, { hash, made });
          }
          await this.o.api.annotate(cluster, appliedManifestAnnotation, hash);
          this.refused.delete(key);
          this.o.log.info({ cluster: key }, 'bridge: applied the cluster from the management API');
        }
      } catch (err) {
        if (!(err instanceof ManifestError || err instanceof RejectedError)) throw err;
        this.refused.set(key, { hash, message: err.message });
      }
    }
    const refusal = overQuota ?? (this.refused.get(key)?.hash === hash ? this.refused.get(key)!.message : undefined);
    const view = await this.writeStatus(cluster, objects, applied, refusal);
    if (view?.controlPlane?.initialized && !secrets.has(`${namespace}/${name}-kubeconfig`))
      await this.writeKubeconfigSecret(cluster);
    if (applied && view && hasTopology(cluster)) await this.keepTopology(cluster, manifest, hash, objects, view);
    if (applied && view) await this.writeBack(cluster, objects, members, view, hash);
  }

  /**
   * A topology's made objects between its changes: one deleted by hand made again, and each MachineDeployment at
   * the version it runs while held for its control plane or its turn, at its new one once released. What the
   * topology made is kept by manifest; a restarted bridge renders it again once.
   */
  private async keepTopology(
    cluster: ApiObject,
    manifest: ManifestSource,
    hash: string,
    objects: ObjectsByKind,
    view: ClusterView,
  ): Promise<void> {
    const key = `${cluster.metadata.namespace}/${cluster.metadata.name}`;
    let kept = this.made.get(key);
    if (kept?.hash !== hash) {
      try {
        kept = { hash, made: loadManifestsWithTopologies([manifest], {}, this.o.kubernetesVersions).made };
      } catch (err) {
        if (err instanceof ManifestError) return;
        throw err;
      }
      this.made.set(key, kept);
    }
    const held = new Set(
      view.pending.filter((p) => p.kind === 'MachineDeployment' && /^HeldFor/.test(p.reason)).map((p) => p.name),
    );
    const running = (md: string) =>
      held.has(md) ? view.machineDeployments.find((m) => m.name === md)?.version : undefined;
    await keepTopologyObjects(this.o.api, cluster, madeAsCarriedOut(kept.made, running), objects);
  }

  /**
   * What the workflows carry out that the objects do not show yet (a `capt rollout undo`, a `capt scale`, a
   * `capt rollout restart`) is written to them, and the manifest they now make is noted as applied, so the next
   * pass neither reverts it nor applies it again. Only once every applied change has reached its owner (before
   * that, an owner's replicas are the old ones), or after a control plane's undo, when only the workers held for
   * the version it left wait: those are written back with it, and the manifest is applied again, so the cluster
   * holds them no more. `hash` is the applied manifest's.
   */
  private async writeBack(
    cluster: ApiObject,
    objects: ObjectsByKind,
    members: ApiObject[],
    view: ClusterView,
    hash: string,
  ): Promise<void> {
    const settled = view.observedGeneration === view.generation;
    // A topology's objects are made of it: a scale is shown on the Cluster's topology (the next pass rewrites them).
    if (hasTopology(cluster)) {
      if (!settled) return;
      const patch = topologyReplicasPatch(cluster, view);
      if (patch) await this.o.api.patch('Cluster', cluster.metadata.namespace, cluster.metadata.name, patch);
      return;
    }
    // The objects a changed one makes the cluster of: a template it names now may be one no other object did.
    const membersWith = (changed: ApiObject[]) => {
      const replaced = (o: ApiObject) =>
        changed.find(
          (c) =>
            c.kind === o.kind && c.metadata.namespace === o.metadata.namespace && c.metadata.name === o.metadata.name,
        ) ?? o;
      const kinds = Object.entries(objects).map(([kind, list]) => [kind, list.map(replaced)]);
      return clusterObjects(cluster, Object.fromEntries(kinds) as ObjectsByKind);
    };
    const load = (changed: ApiObject[]) =>
      loadManifests([clusterManifest(cluster, membersWith(changed))], {}, this.o.kubernetesVersions)[0]!;
    // The applied manifest, loaded once (a load takes tens of milliseconds, and passes come every 2 s).
    const key = `${cluster.metadata.namespace}/${cluster.metadata.name}`;
    if (this.loaded.get(key)?.hash !== hash) this.loaded.set(key, { hash, model: load([]) });
    const undone = controlPlaneUndone(this.loaded.get(key)!.model, view);
    if (!settled && !(undone && onlyHeldForControlPlane(view))) return;
    const { api, client, log } = this.o;
    const templates = await writeBackTemplates({ api, client, log, members, view, load });
    const withTemplates = templates.length ? membersWith(templates) : members;
    const next = await this.writeBackOwners(withTemplates, view);
    if (templates.length || next !== withTemplates)
      await api.annotate(cluster, appliedManifestAnnotation, manifestHash(clusterManifest(cluster, next).text));
    // Last, once the held workers' objects show the version they kept (the admission webhook refuses a control plane
    // older than its workers), and not noted: the next pass applies it, and the cluster holds those workers no more.
    if (undone)
      await writeBackControlPlane({ api, client, log, members: next, view, load: (c) => load([...templates, ...c]) });
  }

  /** Machines of the cluster marked for deletion on their objects whose owners do not know it yet. */
  private async marksInFlight(cluster: ApiObject, objects: ObjectsByKind): Promise<string[]> {
    const { namespace, name } = cluster.metadata;
    const made = madeMachineObjects(objects, namespace, name);
    if (!made.some(asksDeletionFirst)) return [];
    const view = await this.o.client.clusterStatus(namespace, name).catch((err: Error) => {
      if (err instanceof NotFoundError) return undefined;
      throw err;
    });
    return view ? marksInFlight(made, view) : [];
  }

  /**
   * A scale made with `capt scale` (or by a remediation's owner) and a `capt rollout restart`, to a cluster whose
   * objects have not changed since they were applied: the objects take the replicas the workflows carry out, and
   * `spec.rollout.after` the restart's time (as `clusterctl alpha rollout restart` writes it; applying it again
   * restarts nothing, since the current revision was made at that time). Returns the objects as they are now
   * (`members` itself when nothing changed).
   */
  private async writeBackOwners(members: ApiObject[], view: ClusterView): Promise<ApiObject[]> {
    const statusOf = (o: ApiObject) =>
      o.kind === 'KubeadmControlPlane'
        ? view.controlPlane?.name === o.metadata.name
          ? view.controlPlane
          : undefined
        : o.kind === 'MachineDeployment'
          ? view.machineDeployments.find((md) => md.name === o.metadata.name)
          : undefined;
    type OwnerSpec = { replicas?: number; rollout?: { after?: string } };
    const patchOf = (o: ApiObject): OwnerSpec | undefined => {
      const status = statusOf(o);
      if (!status) return undefined;
      const spec = o.spec as OwnerSpec;
      const after = spec.rollout?.after;
      const patch: OwnerSpec = {
        ...(status.replicas !== spec.replicas ? { replicas: status.replicas } : {}),
        ...(status.restartedAt && (!after || Date.parse(after) < Date.parse(status.restartedAt))
          ? { rollout: { after: status.restartedAt } }
          : {}),
      };
      return Object.keys(patch).length ? patch : undefined;
    };
    const patches = new Map(members.map((o) => [o, patchOf(o)] as const).filter(([, p]) => p !== undefined));
    if (patches.size === 0) return members;
    for (const [o, patch] of patches)
      await this.o.api.patch(o.kind as ManagedKind, o.metadata.namespace, o.metadata.name, { spec: patch });
    return members.map((o) => {
      const patch = patches.get(o);
      if (!patch) return o;
      const spec = o.spec as OwnerSpec;
      return {
        ...o,
        spec: { ...spec, ...patch, ...(patch.rollout ? { rollout: { ...spec.rollout, ...patch.rollout } } : {}) },
      };
    });
  }

  /**
   * The `<cluster>-kubeconfig` Secret, as Cluster API writes it (key `value`), once the control plane answers:
   * what `clusterctl get kubeconfig` reads. Its key is made and kept here, in the management API's etcd,
   * where Secrets are encrypted at rest; it is written once, with the Cluster as its owner.
   */
  private async writeKubeconfigSecret(cluster: ApiObject): Promise<void> {
    const { namespace, name } = cluster.metadata;
    await this.o.api.core.ensureSecret({
      metadata: {
        name: `${name}-kubeconfig`,
        namespace,
        labels: { [clusterNameLabel]: name },
        ownerReferences: [controllerRef(cluster)],
      },
      type: clusterSecretType,
      stringData: { value: await this.o.client.kubeconfig(namespace, name) },
    });
  }

  /**
   * Makes the Cluster an owner of its control plane, infrastructure, MachineDeployments and checks, and labels
   * them with its name, as Cluster API's controllers do (clusterctl finds a cluster's objects by that label); and an
   * owner of the templates they reference, unlabelled, so they go with it too.
   */
  private async adopt(cluster: ApiObject, members: ApiObject[]): Promise<void> {
    const { name, uid } = cluster.metadata;
    const ref = { apiVersion: cluster.apiVersion, kind: 'Cluster', name, uid: uid! };
    for (const o of members.filter((m) => m !== cluster && (ownedByCluster(m) || sharedByClusters(m)))) {
      const refs = o.metadata.ownerReferences ?? [];
      const owned = refs.some((r) => r.uid === uid);
      const labels = ownedByCluster(o) ? { [clusterNameLabel]: name } : {};
      const labelled = !ownedByCluster(o) || o.metadata.labels?.[clusterNameLabel] === name;
      if (!owned || !labelled)
        await this.o.api.patch(o.kind as ManagedKind, o.metadata.namespace, o.metadata.name, {
          metadata: { ownerReferences: owned ? refs : [...refs, ref], labels },
        });
    }
  }

  /**
   * A Cluster being deleted: its workflow deletes everything while its objects show it, then the Machine objects'
   * finalizers and its own let them go.
   */
  private async deleting(cluster: ApiObject, objects: ObjectsByKind): Promise<void> {
    const { namespace, name } = cluster.metadata;
    const finalizers = cluster.metadata.finalizers ?? [];
    if (!finalizers.includes(clusterFinalizer)) return;
    try {
      const summary = await this.o.client.clusterSummary(namespace, name);
      if (summary.phase !== 'Deleting') await this.o.client.deleteCluster(namespace, name);
      await this.writeStatus(cluster, objects, false, undefined);
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
      for (const o of madeMachineObjects(objects, namespace, name)) await releaseMachineObject(this.o.api, o);
      await this.o.api.setFinalizers(
        cluster,
        finalizers.filter((f) => f !== clusterFinalizer),
      );
      this.o.log.info({ cluster: `${namespace}/${name}` }, 'bridge: cluster deleted; finalizer removed');
    }
  }

  /**
   * The cluster's view: its owners' full status read again when its summary changed or ownersReadMs passed, and
   * never within an interval of the last read: a pass that follows at once (machines left) goes on from the same
   * view. Read at every such pass, a 1000-machine scale-up read the owner's records every second and took half
   * as long again.
   */
  private async clusterView(key: string, summary: ClusterStatus): Promise<ClusterView> {
    const last = this.views.get(key);
    const age = last ? Date.now() - last.at : Infinity;
    if (last && (age < this.intervalMs || (age < ownersReadMs && isDeepStrictEqual(last.summary, summary))))
      return last.view;
    const view = await this.o.client.clusterView(summary);
    this.views.set(key, { summary, view, at: Date.now() });
    return view;
  }

  /**
   * The Cluster's status from its workflow's, and its control plane's and MachineDeployments', each written when
   * it differs; observed only once the workflows carry the objects' current manifest. A refused manifest adds a
   * False Accepted condition saying why (and is all there is to say when no workflow runs).
   */
  private async writeStatus(
    cluster: ApiObject,
    objects: ObjectsByKind,
    applied: boolean,
    refusal: string | undefined,
  ): Promise<ClusterView | undefined> {
    const { namespace, name } = cluster.metadata;
    const summary = await this.o.client.clusterSummary(namespace, name).catch((err: Error) => {
      if (err instanceof NotFoundError && refusal) return undefined;
      throw err;
    });
    const view = summary && (await this.clusterView(`${namespace}/${name}`, summary));
    const observed = applied && !!view && view.observedGeneration === view.generation;
    const observation = (object: ApiObject): Observation => ({
      generation: object.metadata.generation ?? 1,
      observed,
      now: now(),
    });
    const status = view ? clusterObjectStatus(view, previousOf(cluster), observation(cluster)) : {};
    // Cluster API's Cluster shows its infrastructure's failure domains: here the LocalCluster's, as declared.
    const domains = view && declaredFailureDomains(cluster, objects);
    if (domains?.length) status.failureDomains = domains;
    if (refusal) {
      const before = previousOf(cluster)?.conditions?.find((c) => c.type === 'Accepted');
      const accepted: ApiCondition = {
        type: 'Accepted',
        status: 'False',
        reason: 'Refused',
        message: refusal,
        lastTransitionTime: before?.status === 'False' ? before.lastTransitionTime : now(),
      };
      // A topology Cluster also says so as Cluster API's topology controller does when it cannot reconcile.
      const failed: ApiCondition[] = hasTopology(cluster)
        ? [{ ...accepted, type: topologyReconciledType, reason: 'ReconcileFailed' }]
        : [];
      const kept = ((status.conditions as ApiCondition[] | undefined) ?? []).filter(
        (c) => !failed.some((f) => f.type === c.type),
      );
      status.conditions = [...kept, accepted, ...failed];
    }
    await this.o.api.patchStatusIfChanged(cluster, status);
    if (!view) return undefined;
    const owned = (kind: ManagedKind, owner: OwnerStatus | undefined) =>
      owner && objects[kind]?.find((o) => o.metadata.namespace === namespace && o.metadata.name === owner.name);
    const owners = [
      ...(view.controlPlane ? [{ status: view.controlPlane, kind: 'KubeadmControlPlane' as const }] : []),
      ...view.machineDeployments.map((status) => ({ status, kind: 'MachineDeployment' as const })),
    ].flatMap(({ status, kind }) => {
      const object = owned(kind, status);
      return object ? [{ status, object }] : [];
    });
    for (const { status, object } of owners) {
      const labels =
        status.kind === 'KubeadmControlPlane'
          ? controlPlaneMachineLabels(name, status.name)
          : machineDeploymentMachineLabels(name, status.name);
      await this.o.api.patchStatusIfChanged(
        object,
        ownerObjectStatus(status, view, labelSelector(labels), previousOf(object), observation(object)),
      );
    }
    for (const { status } of owners) {
      const health = status.healthCheck;
      const check =
        health &&
        objects.MachineHealthCheck?.find((o) => o.metadata.namespace === namespace && o.metadata.name === health.name);
      if (check)
        await this.o.api.patchStatusIfChanged(
          check,
          healthCheckObjectStatus(check, status, health, previousOf(check), observation(check)),
        );
    }
    const checks = (objects.MachineHealthCheck ?? []).filter((o) => o.metadata.namespace === namespace);
    const health = machineHealthConditions(
      owners.map((o) => o.status),
      checks,
      Date.now(),
    );
    const started = Date.now();
    const machines = await mirrorMachines(
      this.o.api,
      this.o.client,
      this.o.log,
      view,
      owners,
      objects,
      this.reports,
      now(),
      health,
    );
    if (machines.left > 0) this.machinesLeft = true;
    this.o.log.debug(
      { cluster: `${namespace}/${name}`, ms: Date.now() - started, ...machines },
      'bridge: machines mirrored',
    );
    return view;
  }
}

const previousOf = (o: ApiObject) => o.status as PreviousStatus | undefined;

/** The failure domains the Cluster's LocalCluster declares, as Cluster API's status.failureDomains lists them. */
function declaredFailureDomains(cluster: ApiObject, objects: ObjectsByKind) {
  const ref = (cluster.spec as { infrastructureRef?: { name?: string } } | undefined)?.infrastructureRef;
  const infra = objects.LocalCluster?.find(
    (o) => o.metadata.namespace === cluster.metadata.namespace && o.metadata.name === ref?.name,
  );
  const declared = (infra?.spec as { failureDomains?: { name: string; controlPlane?: boolean }[] } | undefined)
    ?.failureDomains;
  return declared?.map((d) => ({ name: d.name, controlPlane: d.controlPlane ?? false }));
}

const now = () => new Date().toISOString();
