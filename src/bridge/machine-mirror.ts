import { providerKinds } from '../api/kind-registry';
import type { CaptClient } from '../client/capt-client';
import type { ClusterView } from '../contract/cluster';
import type { MachineRecord, OwnerStatus } from '../contract/owner';
import type { ObjectsByKind } from './cluster-documents';
import type { ApiCondition, PreviousStatus } from './cluster-status-out';
import {
  machineObject,
  machineObjectStatus,
  machineSetObject,
  machineSetStatus,
  reportSequenceAnnotation,
} from './machine-objects';
import type { ApiObject, ManagedKind, ManagementClient } from './management-client';

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
  view: ClusterView,
  owners: { status: OwnerStatus; object: ApiObject }[],
  objects: ObjectsByKind,
  now: string,
): Promise<void> {
  const { namespace, name: cluster } = view;
  const infrastructureKind = providerKinds[view.provider]?.machine ?? 'LocalMachine';
  const inCluster = (kind: ManagedKind) =>
    (objects[kind] ?? []).filter(
      (o) => o.metadata.namespace === namespace && (o.spec as { clusterName?: string }).clusterName === cluster,
    );
  const machines = inCluster('Machine');
  const sets = inCluster('MachineSet');
  // Each machine's controller: its MachineSet (by template hash) or its control plane.
  const controllerOf = new Map<string, ApiObject>();
  const wanted: { record: MachineRecord; owner: ApiObject; upToDate: boolean }[] = [];
  for (const { status, object } of owners) {
    const current = (record: MachineRecord) => record.templateHash === status.templateHash;
    if (status.kind === 'KubeadmControlPlane') {
      for (const record of status.machines) wanted.push({ record, owner: object, upToDate: current(record) });
      continue;
    }
    const byHash = new Map<string, ApiObject>();
    for (const set of status.machineSets ?? []) {
      const desired = machineSetObject(object, set, cluster);
      const existing = sets.find((s) => s.metadata.name === set.name) ?? (await api.create(desired));
      byHash.set(set.hash, existing);
      await api.patchStatusIfChanged(existing, machineSetStatus(set, selectorOf(desired)));
    }
    for (const stale of sets.filter((s) => controlledBy(s, object) && ![...byHash.values()].includes(s)))
      await api.delete('MachineSet', namespace, stale.metadata.name);
    for (const record of status.machines) {
      const set = byHash.get(record.templateHash);
      if (set) wanted.push({ record, owner: set, upToDate: current(record) });
    }
  }
  for (const w of wanted) controllerOf.set(w.record.name, w.owner);
  const upToDate = new Set(wanted.filter((w) => w.upToDate).map((w) => w.record.name));
  // A machine's object is written again when it reported something new, or when a rollout left it behind.
  const outOfDate = wanted.filter(({ record, upToDate }) => {
    const o = machines.find((m) => m.metadata.name === record.name);
    const shownUpToDate = (o?.status?.conditions as ApiCondition[] | undefined)?.some(
      (c) => c.type === 'UpToDate' && c.status === 'True',
    );
    return (
      o?.metadata.annotations?.[reportSequenceAnnotation] !== String(record.sequence) || shownUpToDate !== upToDate
    );
  });
  const statuses = await client.machineStatuses(
    namespace,
    outOfDate.map((w) => w.record.name),
  );
  for (const m of statuses) {
    const desired = machineObject(m, controllerOf.get(m.name)!, infrastructureKind);
    const existing = machines.find((o) => o.metadata.name === m.name);
    const object = existing ?? (await api.create(desired));
    if (existing) await api.patch('Machine', namespace, m.name, { metadata: desired.metadata, spec: desired.spec });
    await api.patchStatusIfChanged(
      object,
      machineObjectStatus(m, upToDate.has(m.name), object.status as PreviousStatus | undefined, now),
    );
  }
  // Machines that are gone from their owner's records (and from capt) go from the API too.
  const owned = new Set([...controllerOf.keys()]);
  for (const o of machines)
    if (!owned.has(o.metadata.name) && isControllerMade(o)) await api.delete('Machine', namespace, o.metadata.name);
}

/** A Machine made by the bridge for a MachineSet or control plane, not one a user applied. */
const isControllerMade = (o: ApiObject) =>
  (o.metadata.ownerReferences ?? []).some((r) => r.kind === 'MachineSet' || r.kind === 'KubeadmControlPlane');

const selectorOf = (o: ApiObject) =>
  Object.entries(o.metadata.labels ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
