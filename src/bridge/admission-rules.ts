import { isDeepStrictEqual } from 'node:util';
import { stringify } from 'yaml';
import { loadManifests, loadManifestsWithTopologies, type ManifestSource } from '../api/load-manifests';
import { resourceKey } from '../contract/resource-set';
import { resourceSetChangeRefusal } from '../../workflows/addons/resource-set-change';
import { ManifestError } from '../api/manifest-error';
import type { ClusterModel } from '../api/model';
import { withDefaults } from '../defaulting/defaults';
import type { PlainObject } from '../defaulting/plain-object';
import { AnnotationValueError } from '../defaulting/replicas-default';
import type { AdmissionRequest } from './admission-review';
import {
  asManifest,
  clusterManifest,
  clusterObjects,
  madeByController,
  madeFromTopology,
  type ObjectsByKind,
} from './cluster-documents';
import type { ApiObject, ManagedKind } from './management-client';

/**
 * What the admission webhook decides from the objects alone: the manifest the bridge would build for each
 * Cluster the incoming object belongs to, with the object in place, loaded exactly as `capt apply` loads a
 * file. Whether a change is one a running cluster takes is asked of its workflow (admission.ts).
 */

/** The kinds a Cluster's manifest is made of (cluster-documents.ts), which the webhook reviews. */
export const reviewedKinds = [
  'Cluster',
  'KubeadmControlPlane',
  'MachineDeployment',
  'MachineHealthCheck',
  'Machine',
  'KubeadmConfig',
  'KubeadmConfigTemplate',
  'LocalCluster',
  'LocalMachineTemplate',
  'LocalMachine',
  'ClusterClass',
  'KubeadmControlPlaneTemplate',
  'LocalClusterTemplate',
] as const satisfies readonly ManagedKind[];

/** Resources the webhook reviews besides reviewedKinds: a ClusterResourceSet is checked alone (resource-set-door.ts). */
export const resourceSetResources = [{ group: 'addons.cluster.x-k8s.io', plural: 'clusterresourcesets' }] as const;

/**
 * A ClusterResourceSet's refusal, as `capt apply -f` would refuse the set: its schema and rules, then (on an update)
 * Cluster API's immutable selector and strategy. Its ConfigMaps and Secrets may come later: the bridge applies the
 * set once they are there. Undefined for every other object, and for one on its way out.
 */
export function resourceSetRefusal(request: AdmissionRequest): string | undefined {
  const { operation, object, oldObject } = request;
  if ((operation !== 'CREATE' && operation !== 'UPDATE') || object?.kind !== 'ClusterResourceSet') return undefined;
  if (object.metadata.deletionTimestamp) return undefined;
  const load = (o: ApiObject) =>
    loadManifestsWithTopologies(
      [
        {
          file: `management API, ClusterResourceSet ${o.metadata.namespace}/${o.metadata.name}`,
          text: stringify(asManifest(o)),
        },
      ],
      {},
    ).addons.resourceSets[0]!;
  try {
    const next = load(object);
    if (operation !== 'UPDATE' || !oldObject) return undefined;
    const previous = load(oldObject);
    return resourceSetChangeRefusal(previous, next, next.resources.map(resourceKey));
  } catch (err) {
    if (err instanceof ManifestError) return err.message;
    throw err;
  }
}

export interface AdmissionCheck {
  /** capt's located message when the objects are refused as they are. */
  refusal?: string;
  /** Each Cluster the object belongs to, loaded: `next` with the object, `previous` as stored (when it loads). */
  clusters: { next: ClusterModel; previous?: ClusterModel }[];
  /** The Clusters past the load budget (a class many use), left for the bridge to check as it applies them. */
  unchecked?: string[];
}

/**
 * How long one request may load Clusters. A class's Clusters are each rendered twice (with the change, and as
 * stored; about 0.2 s each) and synchronously, so a class many Clusters use would hold the bridge (its passes,
 * its Lease) for as long, past the 4 s the webhook has anyway. The first Cluster is always checked.
 */
export const admissionLoadBudgetMs = 2_000;

const key = (o: ApiObject) => `${o.kind}/${o.metadata.namespace}/${o.metadata.name}`;

/**
 * Whether the request needs the objects read at all. Never a deletion, nor an object on its way out (only
 * its finalizers change), nor a Machine a MachineSet or control plane made; an update only when the desired
 * state changed, so the bridge's own writes (finalizers, owners, annotations of its own) always pass.
 */
export function needsReview(request: AdmissionRequest): boolean {
  const { operation, object, oldObject } = request;
  if ((operation !== 'CREATE' && operation !== 'UPDATE') || !object) return false;
  if (!(reviewedKinds as readonly string[]).includes(object.kind)) return false;
  if (object.metadata.deletionTimestamp || madeByController(object) || madeFromTopology(object)) return false;
  return !(operation === 'UPDATE' && oldObject && sameDesiredState(oldObject, object));
}

/**
 * Whether `next` asks for what `old` asked for: the same manifest, or only Cluster API's defaults filled in
 * (the defaulting webhook adds them to an object stored before it answered, at its next write, the bridge's
 * own included).
 */
function sameDesiredState(old: ApiObject, next: ApiObject): boolean {
  if (isDeepStrictEqual(asManifest(old), asManifest(next))) return true;
  try {
    const defaulted = withDefaults(old as unknown as PlainObject, old as unknown as PlainObject);
    return isDeepStrictEqual(asManifest(defaulted as unknown as ApiObject), asManifest(next));
  } catch (err) {
    if (err instanceof AnnotationValueError) return false;
    throw err;
  }
}

/** The objects with `object` in place of the stored one of its kind and name, or added. */
function withObject(objects: ObjectsByKind, object: ApiObject): ObjectsByKind {
  const kind = object.kind as ManagedKind;
  return { ...objects, [kind]: [...(objects[kind] ?? []).filter((o) => key(o) !== key(object)), object] };
}

/** The Clusters whose manifest holds `object`: a Cluster's own; none for an object no Cluster references yet. */
function clustersOf(object: ApiObject, objects: ObjectsByKind): ApiObject[] {
  if (object.kind === 'Cluster') return [object];
  return (objects.Cluster ?? []).filter((c) => clusterObjects(c, objects).some((o) => key(o) === key(object)));
}

/**
 * The manifest loaded as `capt apply` loads it. Objects arrive one by one (kubectl apply -f, GitOps, in any
 * order), so a reference to one not there yet is no refusal: the cluster is checked whole once it is complete.
 */
function load(source: ManifestSource, kubernetesVersions?: string[]): { models: ClusterModel[]; refusal?: string } {
  try {
    return { models: loadManifests([source], {}, kubernetesVersions) };
  } catch (err) {
    if (!(err instanceof ManifestError)) throw err;
    const refused = err.problems.filter((p) => !p.missing);
    return { models: [], refusal: refused.length ? new ManifestError(refused).message : undefined };
  }
}

/**
 * Checks the object of a request `needsReview` passed, among the objects of its namespace as stored. An
 * object of no Cluster (a template applied before its Cluster) is checked on its own, as far as one goes.
 */
export function checkAdmission(
  request: AdmissionRequest,
  objects: ObjectsByKind,
  kubernetesVersions?: string[],
  budgetMs = admissionLoadBudgetMs,
): AdmissionCheck {
  const object = request.object!;
  const next = withObject(objects, object);
  const clusters = clustersOf(object, next);
  if (!clusters.length) {
    const { namespace, name } = object.metadata;
    const alone = { file: `management API, ${object.kind} ${namespace}/${name}`, text: stringify(asManifest(object)) };
    return { refusal: load(alone, kubernetesVersions).refusal, clusters: [] };
  }
  const out: AdmissionCheck = { clusters: [] };
  const until = Date.now() + budgetMs;
  for (const [i, cluster] of clusters.entries()) {
    if (i > 0 && Date.now() > until) {
      out.unchecked = clusters.slice(i).map((c) => `${c.metadata.namespace}/${c.metadata.name}`);
      break;
    }
    const loaded = load(clusterManifest(cluster, clusterObjects(cluster, next)), kubernetesVersions);
    if (loaded.refusal) return { refusal: loaded.refusal, clusters: [] };
    if (!loaded.models[0]) continue;
    const previous = request.oldObject && storedModel(request.oldObject, cluster, objects, kubernetesVersions);
    out.clusters.push({ next: loaded.models[0], previous });
  }
  return out;
}

/** The cluster's model before the change (`old` in place), when its stored objects load without a problem. */
function storedModel(
  old: ApiObject,
  cluster: ApiObject,
  objects: ObjectsByKind,
  kubernetesVersions?: string[],
): ClusterModel | undefined {
  const oldCluster = old.kind === 'Cluster' ? old : cluster;
  const loaded = load(
    clusterManifest(oldCluster, clusterObjects(oldCluster, withObject(objects, old))),
    kubernetesVersions,
  );
  return loaded.refusal ? undefined : loaded.models[0];
}
