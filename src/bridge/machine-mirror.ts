import { providerKinds } from '../api/kind-registry';
import type { Logger } from 'pino';
import { RejectedError, type CaptClient } from '../client/capt-client';
import type { MachineStatus } from '../contract/machine';
import type { ClusterView } from '../contract/cluster';
import type { MachineRecord, OwnerStatus } from '../contract/owner';
import { madeByController, type ObjectsByKind } from './cluster-documents';
import type { ApiCondition, PreviousStatus } from './cluster-status-out';
import {
  machineObject,
  machineObjectStatus,
  machineSetObject,
  machineSetStatus,
  labelSelector,
  machineFinalizer,
  reportSequenceAnnotation,
} from './machine-objects';
import type { ApiObject, ManagedKind, ManagementClient } from './management-client';
import { annotationChange, annotationsEdited, ownAnnotations } from './machine-annotations-door';

const controlledBy = (o: ApiObject, owner: ApiObject) =>
  (o.metadata.ownerReferences ?? []).some((r) => r.uid === owner.metadata.uid);

/**
 * Keeps one cluster's MachineSets and Machines in the management API in step with its owners' records, as
 * Cluster API's controllers keep theirs: made, updated and deleted by the bridge alone. A machine's workflow
 * is read only when its owner's record says it reported something new since its object was written.
 */
export async function mirrorMachines(
  api: ManagementClient,
  client: CaptClient,
  log: Logger,
  view: ClusterView,
  owners: { status: OwnerStatus; object: ApiObject }[],
  objects: ObjectsByKind,
  now: string,
): Promise<void> {
  const { namespace, name: cluster } = view;
  // An edit the machine refuses (it is being deleted, say) is undone on the object, which shows what capt runs.
  const annotate = (read: MachineStatus, o: ApiObject) =>
    client.annotateMachine(namespace, read.name, annotationChange(read.annotations, ownAnnotations(o))).catch((err) => {
      if (!(err instanceof RejectedError)) throw err;
      log.warn({ machine: `${namespace}/${read.name}`, reason: (err as Error).message }, 'bridge: annotation refused');
      return read;
    });
  const infrastructureKind = providerKinds[view.provider]?.machine ?? 'LocalMachine';
  const inCluster = (kind: ManagedKind) =>
    (objects[kind] ?? []).filter(
      (o) => o.metadata.namespace === namespace && (o.spec as { clusterName?: string }).clusterName === cluster,
    );
  const machines = new Map(inCluster('Machine').map((o) => [o.metadata.name, o]));
  const sets = inCluster('MachineSet');
  // Each machine's controller (its MachineSet, by template hash, or its control plane) and whether it is current.
  const wanted = new Map<string, { record: MachineRecord; owner: ApiObject; upToDate: boolean }>();
  for (const { status, object } of owners) {
    const want = (record: MachineRecord, owner: ApiObject) =>
      wanted.set(record.name, { record, owner, upToDate: record.templateHash === status.templateHash });
    if (status.kind === 'KubeadmControlPlane') {
      for (const record of status.machines) want(record, object);
      continue;
    }
    const byHash = new Map<string, ApiObject>();
    for (const set of status.machineSets ?? []) {
      const desired = machineSetObject(object, set, cluster);
      const existing = sets.find((s) => s.metadata.name === set.name) ?? (await api.create(desired));
      byHash.set(set.hash, existing);
      await api.patchStatusIfChanged(existing, machineSetStatus(set, labelSelector(desired.metadata.labels ?? {})));
    }
    for (const stale of sets.filter((s) => controlledBy(s, object) && ![...byHash.values()].includes(s)))
      await api.delete('MachineSet', namespace, stale.metadata.name);
    for (const record of status.machines) {
      const set = byHash.get(record.templateHash);
      if (set) want(record, set);
    }
  }
  // A machine's object is written again when it reported something new, when a rollout left it behind, or when
  // someone changed its annotations (which go to the machine first).
  const outOfDate = [...wanted.values()].filter(({ record, upToDate }) => {
    const o = machines.get(record.name);
    const shownUpToDate = (o?.status?.conditions as ApiCondition[] | undefined)?.some(
      (c) => c.type === 'UpToDate' && c.status === 'True',
    );
    return (
      o?.metadata.annotations?.[reportSequenceAnnotation] !== String(record.sequence) ||
      shownUpToDate !== upToDate ||
      (o !== undefined && annotationsEdited(o))
    );
  });
  const statuses = await client.machineStatuses(
    namespace,
    outOfDate.map((w) => w.record.name),
  );
  for (const read of statuses) {
    const { owner, upToDate } = wanted.get(read.name)!;
    const existing = machines.get(read.name);
    const m = existing && annotationsEdited(existing) ? await annotate(read, existing) : read;
    const desired = machineObject(m, owner, infrastructureKind);
    const object = existing ?? (await api.create(desired));
    // A merge patch keeps keys it does not name: the ones the machine no longer has are removed by name.
    const gone = Object.keys(existing ? ownAnnotations(existing) : {}).filter((k) => !(k in m.annotations));
    // Finalizers are set when the object is made: one cannot be added to an object being deleted.
    const { finalizers: _made, ...kept } = desired.metadata;
    const metadata = {
      ...kept,
      annotations: { ...desired.metadata.annotations, ...Object.fromEntries(gone.map((k) => [k, null])) },
    };
    if (existing) await api.patch('Machine', namespace, m.name, { metadata, spec: desired.spec });
    await api.patchStatusIfChanged(
      object,
      machineObjectStatus(m, upToDate, object.status as PreviousStatus | undefined, now),
    );
  }
  await mirrorDeletions(api, client, log, [...machines.values()].filter(madeByController), wanted);
}

/**
 * Deletion both ways, as Cluster API's Machine finalizer makes it: a machine capt deletes shows a deletion
 * timestamp (and phase Deleting) while it drains, and its object goes when the machine is gone; a Machine object
 * deleted with kubectl deletes its machine, which its owner replaces.
 */
async function mirrorDeletions(
  api: ManagementClient,
  client: CaptClient,
  log: Logger,
  machines: ApiObject[],
  wanted: Map<string, { record: MachineRecord }>,
): Promise<void> {
  for (const o of machines) {
    const { namespace, name, deletionTimestamp } = o.metadata;
    const record = wanted.get(name)?.record;
    if (record && deletionTimestamp && !record.deleting)
      await client.deleteMachine(namespace, name).catch((err: Error) => {
        if (!(err instanceof RejectedError)) throw err;
        log.warn({ machine: `${namespace}/${name}`, reason: err.message }, 'bridge: machine deletion refused');
      });
    else if (record?.deleting && !deletionTimestamp) await api.delete('Machine', namespace, name);
    else if (!record) await releaseMachineObject(api, o);
  }
}

/** A Machine object whose machine is gone: its finalizer comes off and it goes. */
export async function releaseMachineObject(api: ManagementClient, o: ApiObject): Promise<void> {
  const finalizers = o.metadata.finalizers ?? [];
  if (finalizers.includes(machineFinalizer))
    await api.setFinalizers(
      o,
      finalizers.filter((f) => f !== machineFinalizer),
    );
  if (!o.metadata.deletionTimestamp) await api.delete('Machine', o.metadata.namespace, o.metadata.name);
}
