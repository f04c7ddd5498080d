import { createHash } from 'node:crypto';
import { stringify } from 'yaml';
import type { ManifestSource } from '../api/load-manifests';
import type { ApiObject, ManagedKind, ManagementClient } from './management-client';
import { conversionDataAnnotation } from '../conversion/conversion-data';
import { classReferences } from '../api/topology/expand-topology';
import { machineMaxAgeAnnotation } from '../contract/machine-max-age';
import { inPlaceUpdatesAnnotation } from '../contract/in-place';
import { maintenanceWindowAnnotation, rolloutInWindowAnnotation } from '../contract/maintenance-window';

/** Every object the bridge read, by kind. */
export type ObjectsByKind = Partial<Record<ManagedKind, ApiObject[]>>;

/** The objects of `kinds`, read side by side: in one namespace, or in all. */
export async function readObjects(
  api: ManagementClient,
  kinds: readonly ManagedKind[],
  namespace?: string,
): Promise<ObjectsByKind> {
  const lists = await Promise.all(kinds.map((kind) => api.list(kind, namespace)));
  return Object.fromEntries(kinds.map((kind, i) => [kind, lists[i]]));
}

type Ref = { kind?: string; name?: string } | undefined;

const clusterNameOf = (o: ApiObject) => (o.spec as { clusterName?: string } | undefined)?.clusterName;
/** The owners whose Machines the bridge makes: an object one of them owns is the bridge's, not desired state. */
export const controllerOwnerKinds = ['MachineSet', 'KubeadmControlPlane'] as const;
/** Machines the bridge made for a MachineSet or control plane (not desired state), as opposed to ones a user applied. */
export const madeByController = (o: ApiObject) =>
  (o.metadata.ownerReferences ?? []).some((r) => (controllerOwnerKinds as readonly string[]).includes(r.kind));

/** The Machine objects the bridge made for a cluster's owners. */
export const madeMachineObjects = (objects: ObjectsByKind, namespace: string, cluster: string) =>
  (objects.Machine ?? []).filter(
    (o) => o.metadata.namespace === namespace && clusterNameOf(o) === cluster && madeByController(o),
  );

/** The objects, each kind and name once (two references to one template give it once). */
const once = (objects: ApiObject[]) => [...new Map(objects.map((o) => [`${o.kind}/${o.metadata.name}`, o])).values()];

/** Cluster API's label on the objects its topology controller made of a Cluster's topology. */
export const topologyOwnedLabel = 'topology.cluster.x-k8s.io/owned';
/** An object the bridge made of a Cluster's topology, as Cluster API's topology controller makes them: not desired state. */
export const madeFromTopology = (o: ApiObject) => o.metadata.labels?.[topologyOwnedLabel] !== undefined;
/** A Cluster made from a ClusterClass. */
export const hasTopology = (cluster: ApiObject) =>
  cluster.spec?.topology !== undefined && cluster.spec.topology !== null;

/**
 * A Cluster with spec.topology, its ClusterClass and the templates the class names (what `capt apply` takes for
 * it); the objects made of them are not desired state. Those not stored yet are left out: loading names them.
 */
function topologyObjects(cluster: ApiObject, objects: ObjectsByKind): ApiObject[] {
  const classRef = (cluster.spec?.topology as { classRef?: { name?: string; namespace?: string } }).classRef;
  const namespace = classRef?.namespace ?? cluster.metadata.namespace;
  const inClassNamespace = (kind: string, name: string | undefined) =>
    (objects[kind as ManagedKind] ?? []).filter((o) => o.metadata.namespace === namespace && o.metadata.name === name);
  const clusterClass = inClassNamespace('ClusterClass', classRef?.name);
  const templates = clusterClass.flatMap((c) =>
    classReferences(c.spec, 'spec').flatMap((ref) => inClassNamespace(ref.kind, ref.name)),
  );
  return once([cluster, ...clusterClass, ...templates]);
}

/**
 * A cluster's objects as the management API holds them: the Cluster, the objects it references, the
 * MachineDeployments, MachineHealthChecks and standalone Machines that name it, and the templates those
 * reference; for a Cluster with spec.topology, its class and the class's templates.
 */
export function clusterObjects(cluster: ApiObject, objects: ObjectsByKind): ApiObject[] {
  if (hasTopology(cluster)) return topologyObjects(cluster, objects);
  const { namespace, name } = cluster.metadata;
  const inNamespace = (kind: ManagedKind) => (objects[kind] ?? []).filter((o) => o.metadata.namespace === namespace);
  const referenced = (ref: Ref) =>
    ref?.kind && ref.name
      ? inNamespace(ref.kind as ManagedKind).filter((o) => o.metadata.name === ref.name)
      : ([] as ApiObject[]);
  const spec = cluster.spec as { controlPlaneRef?: Ref; infrastructureRef?: Ref } | undefined;
  const controlPlanes = referenced(spec?.controlPlaneRef);
  const deployments = inNamespace('MachineDeployment').filter((o) => clusterNameOf(o) === name);
  const machines = inNamespace('Machine').filter((o) => clusterNameOf(o) === name && !madeByController(o));
  type MachineSpecRefs = { bootstrap?: { configRef?: Ref }; infrastructureRef?: Ref };
  const machineRefs = (s: MachineSpecRefs | undefined) => [
    ...referenced(s?.bootstrap?.configRef),
    ...referenced(s?.infrastructureRef),
  ];
  const documents = [
    cluster,
    ...referenced(spec?.infrastructureRef),
    ...controlPlanes,
    ...controlPlanes.flatMap((cp) =>
      machineRefs((cp.spec as { machineTemplate?: { spec?: MachineSpecRefs } }).machineTemplate?.spec),
    ),
    ...deployments,
    ...deployments.flatMap((md) => machineRefs((md.spec as { template?: { spec?: MachineSpecRefs } }).template?.spec)),
    ...machines,
    ...machines.flatMap((m) => machineRefs(m.spec as MachineSpecRefs)),
    ...inNamespace('MachineHealthCheck').filter((o) => clusterNameOf(o) === name),
  ];
  return once(documents);
}

/** The hash of a manifest handed to a workflow, kept on its object so a pass hands it again only once it changed. */
export const manifestHash = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 32);

/** Those objects as one manifest, loaded exactly as a file given to `capt apply`; the source is named for errors. */
export function clusterManifest(cluster: ApiObject, members: ApiObject[]): ManifestSource {
  const { namespace, name } = cluster.metadata;
  return {
    file: `management API, Cluster ${namespace}/${name}`,
    text: members.map((o) => stringify(asManifest(o))).join('---\n'),
  };
}

/** The objects Cluster API's controllers make a Cluster the owner of, so they go when it is gone. */
export const ownedByCluster = (o: ApiObject) =>
  ['KubeadmControlPlane', 'MachineDeployment', 'MachineHealthCheck'].includes(o.kind) || o.kind.endsWith('Cluster');

/**
 * The machine templates a control plane and MachineDeployments reference: Cluster API's controllers add each
 * Cluster that uses one to its owners, not as its controller and without a cluster label (clusters may share a
 * template), so the garbage collector deletes it with the last of them.
 */
export const sharedByClusters = (o: ApiObject) => o.kind.endsWith('Template');

/** Cluster API's label naming an object's cluster: its controllers set it (the bridge too), so it is not desired state. */
export const clusterNameLabel = 'cluster.x-k8s.io/cluster-name';

/** Annotations tools keep on an object about their own work (kubectl's last apply, the bridge's, conversion data), not desired state. */
export const bookkeeping = (key: string) =>
  key === 'kubectl.kubernetes.io/last-applied-configuration' ||
  key === conversionDataAnnotation ||
  (key.startsWith('capt.cluster.x-k8s.io/') && !operatorAnnotations.has(key));

/** capt's annotations an operator writes (the bridge writes none of them): desired state, carried like a field. */
const operatorAnnotations = new Set([
  machineMaxAgeAnnotation,
  maintenanceWindowAnnotation,
  rolloutInWindowAnnotation,
  inPlaceUpdatesAnnotation,
]);

/**
 * The object as a manifest carries it: its desired state, without what the API server or a controller wrote (on a
 * Cluster with spec.topology, the references to the objects made of it).
 */
export function asManifest(o: ApiObject) {
  const { name, namespace, labels, annotations } = o.metadata;
  const { controlPlaneRef: _cp, infrastructureRef: _infra, ...topologySpec } = o.spec ?? {};
  const spec = o.kind === 'Cluster' && hasTopology(o) ? topologySpec : o.spec;
  const kept = Object.fromEntries(Object.entries(annotations ?? {}).filter(([k]) => !bookkeeping(k)));
  const ownLabels = Object.fromEntries(Object.entries(labels ?? {}).filter(([k]) => k !== clusterNameLabel));
  return {
    apiVersion: o.apiVersion,
    kind: o.kind,
    metadata: {
      name,
      namespace,
      ...(Object.keys(ownLabels).length ? { labels: ownLabels } : {}),
      ...(Object.keys(kept).length ? { annotations: kept } : {}),
    },
    ...(spec ? { spec } : {}),
  };
}
