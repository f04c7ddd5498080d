import { isDeepStrictEqual } from 'node:util';
import type { MadeObject } from '../api/load-manifests';
import { clusterNameLabel, madeFromTopology } from './cluster-documents';
import { controllerRef } from './machine-objects';
import { managedResources, type ApiObject, type ManagedKind, type ManagementClient } from './management-client';
import type { ObjectsByKind } from './cluster-documents';

/** A reference as a v1beta2 Cluster holds one: group, kind, name. */
const contractRef = (o: MadeObject) => ({ apiGroup: o.apiVersion.split('/')[0], kind: o.kind, name: o.metadata.name });

/** The stored object of `m`'s kind and name in `namespace`, if any. */
const storedObject = (objects: ObjectsByKind, namespace: string, m: MadeObject) =>
  objects[m.kind as ManagedKind]?.find(
    (o) => o.metadata.namespace === namespace && o.metadata.name === m.metadata.name,
  );

/** The object `m` as the bridge writes it: controlled by the Cluster. */
function madeObject(cluster: ApiObject, m: MadeObject): ApiObject {
  const { namespace, name } = cluster.metadata;
  if (!(m.kind in managedResources))
    throw new Error(`the topology of Cluster ${namespace}/${name} makes a ${m.kind}, a kind the bridge does not write`);
  return {
    apiVersion: m.apiVersion,
    kind: m.kind,
    metadata: {
      name: m.metadata.name,
      namespace,
      labels: m.metadata.labels,
      annotations: m.metadata.annotations,
      ownerReferences: [controllerRef(cluster)],
    },
    spec: m.spec,
  };
}

type MachineDeploymentSpec = { template: { spec: { version?: string } & Record<string, unknown> } };
const versionOf = (o: { spec?: Record<string, unknown> }) =>
  (o.spec as MachineDeploymentSpec | undefined)?.template?.spec?.version;

/**
 * The made objects as the workflows carry them out: a MachineDeployment given a version by `running` (one held
 * for its control plane, or for its turn in the topology's upgrade order) keeps it, as Cluster API's topology
 * controller writes a MachineDeployment's new version only at its turn.
 */
export function madeAsCarriedOut(made: MadeObject[], running: (name: string) => string | undefined): MadeObject[] {
  return made.map((m) => {
    const version = m.kind === 'MachineDeployment' ? running(m.metadata.name) : undefined;
    if (!version || version === versionOf(m)) return m;
    const spec = m.spec as MachineDeploymentSpec;
    return { ...m, spec: { ...spec, template: { ...spec.template, spec: { ...spec.template.spec, version } } } };
  });
}

/**
 * Between changes of the topology, each pass: a made object deleted by hand is made again, and a
 * MachineDeployment shows the version `made` gives it (its new one once released). Nothing else is compared: the
 * objects were written whole when the topology was applied.
 */
export async function keepTopologyObjects(
  api: ManagementClient,
  cluster: ApiObject,
  made: MadeObject[],
  objects: ObjectsByKind,
): Promise<void> {
  const { namespace } = cluster.metadata;
  for (const m of made) {
    const current = storedObject(objects, namespace, m);
    if (!current) await api.create(madeObject(cluster, m));
    else if (m.kind === 'MachineDeployment' && versionOf(current) !== versionOf(m))
      await api.patch('MachineDeployment', namespace, m.metadata.name, {
        spec: { template: { spec: { version: versionOf(m) } } },
      });
  }
}

/**
 * Writes the objects a Cluster's topology was expanded into, as Cluster API's topology controller does: each
 * controlled by the Cluster (so they go with it) and labelled as made of its topology; those it no longer makes
 * (a template rotated away, a MachineDeployment removed from the topology) are deleted; and the Cluster's
 * controlPlaneRef and infrastructureRef name the new ones. Their status is written like that of objects applied
 * by hand. Idempotent: an object already as made is left alone.
 */
export async function writeTopologyObjects(
  api: ManagementClient,
  cluster: ApiObject,
  made: MadeObject[],
  objects: ObjectsByKind,
): Promise<void> {
  const { namespace, name, uid } = cluster.metadata;
  for (const m of made) {
    const object = madeObject(cluster, m);
    const current = storedObject(objects, namespace, m);
    if (!current) await api.create(object);
    else if (
      !isDeepStrictEqual(current.spec, m.spec) ||
      !isDeepStrictEqual(current.metadata.labels ?? {}, m.metadata.labels ?? {}) ||
      !isDeepStrictEqual(current.metadata.ownerReferences, object.metadata.ownerReferences)
    )
      await api.replace({
        ...object,
        metadata: { ...object.metadata, resourceVersion: current.metadata.resourceVersion },
      });
  }
  const kept = new Set(made.map((m) => `${m.kind}/${m.metadata.name}`));
  for (const [kind, list] of Object.entries(objects))
    for (const o of list)
      if (
        o.metadata.namespace === namespace &&
        o.metadata.labels?.[clusterNameLabel] === name &&
        madeFromTopology(o) &&
        (o.metadata.ownerReferences ?? []).some((r) => r.uid === uid) &&
        !kept.has(`${kind}/${o.metadata.name}`)
      )
        await api.delete(kind as ManagedKind, namespace, o.metadata.name);
  const controlPlane = made.find((m) => m.kind === 'KubeadmControlPlane');
  const infrastructure = made.find((m) => m.kind.endsWith('Cluster'));
  const refs = {
    ...(controlPlane && { controlPlaneRef: contractRef(controlPlane) }),
    ...(infrastructure && { infrastructureRef: contractRef(infrastructure) }),
  };
  const spec = cluster.spec as { controlPlaneRef?: unknown; infrastructureRef?: unknown };
  if (!isDeepStrictEqual(refs, { controlPlaneRef: spec.controlPlaneRef, infrastructureRef: spec.infrastructureRef }))
    await api.patch('Cluster', namespace, name, { spec: refs });
}
