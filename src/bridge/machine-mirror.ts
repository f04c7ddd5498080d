import { providerKinds } from '../api/kind-registry';
import { forEachBounded } from '../util/bounded-parallel';
import type { Logger } from 'pino';
import { RejectedError, type CaptClient } from '../client/capt-client';
import { MachinePhase, type Condition, type MachineStatus } from '../contract/machine';
import type { ClusterView } from '../contract/cluster';
import type { MachineRecord, OwnerStatus } from '../contract/owner';
import { madeByController, type ObjectsByKind } from './cluster-documents';
import { apiConditions, type ApiCondition, type PreviousStatus } from './cluster-status-out';
import { healthCheckSucceeded } from './machine-health-out';
import {
  machineObject,
  machineObjectStatus,
  machineSetObject,
  machineSetStatus,
  machineSetSelector,
  machineFinalizer,
  machineObjectChanged,
  machineObjectDue,
  taintsGone,
  labelsGone,
  machineSetLabelsPatch,
  withRemoved,
} from './machine-objects';
import type { MirroredReports } from './mirrored-reports';
import type { ApiObject, ManagedKind, ManagementClient } from './management-client';
import { annotationChange, annotationsEdited, ownAnnotations } from './machine-annotations-door';

/**
 * Machines read and their objects written at once: a scale-up of hundreds makes hundreds of objects in one pass,
 * and one at a time the pass (and with it every status the bridge writes) took tens of seconds at 1000 machines.
 */
const writesInFlight = 32;
/**
 * How long a pass starts machines' reads and writes; the rest wait for the next pass. A read waits on the
 * machine's worker, which answers late while it makes hundreds of machines: a pass that took every machine
 * then held every other status (and the machines already running) for tens of seconds.
 */
const machinesBudgetMs = 3_000;

/** What a pass did of a cluster's machines: how many objects were due a write, written, and left for the next pass. */
export interface MachinesMirrored {
  due: number;
  written: number;
  left: number;
}

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
  reports: MirroredReports,
  now: string,
  health: Map<string, Condition>,
): Promise<MachinesMirrored> {
  const { namespace, name: cluster } = view;
  // An edit the machine refuses (it is being deleted, say) is undone on the object, which shows what capt runs.
  const annotate = (read: MachineStatus, o: ApiObject) =>
    client
      .annotateMachine(namespace, read.name, annotationChange(read.annotations, ownAnnotations(o)))
      .catch(loggedRefusal(log, `${namespace}/${read.name}`, 'annotation', read));
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
      const found = sets.find((s) => s.metadata.name === set.name);
      const existing = found ?? (await api.create(desired));
      const relabel = found && machineSetLabelsPatch(found, desired);
      if (relabel) await api.patch('MachineSet', namespace, set.name, relabel);
      byHash.set(set.hash, existing);
      await api.patchStatusIfChanged(existing, machineSetStatus(set, machineSetSelector(existing)));
    }
    for (const stale of sets.filter((s) => controlledBy(s, object) && ![...byHash.values()].includes(s)))
      await api.delete('MachineSet', namespace, stale.metadata.name);
    for (const record of status.machines) {
      const set = byHash.get(record.templateHash);
      if (set) want(record, set);
    }
  }
  // A machine's object is made when it is due (machineObjectDue), and written again when it reported something
  // new, when a rollout left it behind, or when someone changed its annotations (which go to the machine first).
  const outOfDate = [...wanted.values()].filter(({ record, upToDate }) => {
    const o = machines.get(record.name);
    if (!o && !machineObjectDue(record, Date.now())) return false;
    const shownUpToDate = (o?.status?.conditions as ApiCondition[] | undefined)?.some(
      (c) => c.type === 'UpToDate' && c.status === 'True',
    );
    return (
      reports.sequence(o) !== String(record.sequence) ||
      shownUpToDate !== upToDate ||
      (o !== undefined && annotationsEdited(o))
    );
  });
  // Each machine read and written in turn, many at once: read all first, the pass waited for the slowest of a
  // thousand queries (a busy worker answers them late) before it wrote the first object. Objects that exist come
  // first (a machine running, or being deleted), then new machines already running, then the rest, oldest first:
  // under load a machine is often running by the time its object is made, and one read makes it with its status.
  const order = ({ record }: { record: MachineRecord }) =>
    machines.has(record.name) ? 0 : record.phase === MachinePhase.Running ? 1 : 2;
  outOfDate.sort((a, b) => order(a) - order(b) || a.record.createdAt.localeCompare(b.record.createdAt));
  const until = Date.now() + machinesBudgetMs;
  const written = new Set<string>();
  let started = 0;
  await forEachBounded(
    outOfDate,
    writesInFlight,
    async ({ record }) => {
      started++;
      const read = await client.reportedMachineStatus(namespace, record.name, record.sequence);
      if (!read) return;
      const { owner, upToDate } = wanted.get(read.name)!;
      const existing = machines.get(read.name);
      const m = existing && annotationsEdited(existing) ? await annotate(read, existing) : read;
      const desired = machineObject(m, owner, infrastructureKind);
      // The finalizer is set when the object is made: none can be added to an object being deleted.
      const object =
        existing ??
        (await api.create({ ...desired, metadata: { ...desired.metadata, finalizers: [machineFinalizer] } }));
      // A merge patch keeps keys it does not name: the ones the machine no longer has are removed by name.
      const gone = Object.keys(existing ? ownAnnotations(existing) : {}).filter((k) => !(k in m.annotations));
      const goneLabels = existing ? labelsGone(existing, desired.metadata.labels ?? {}) : [];
      const metadata = {
        ...desired.metadata,
        labels: withRemoved(desired.metadata.labels, goneLabels),
        annotations: withRemoved(desired.metadata.annotations, gone),
      };
      if (existing && (gone.length + goneLabels.length > 0 || machineObjectChanged(existing, desired)))
        await api.patch('Machine', namespace, m.name, {
          metadata,
          spec: { ...desired.spec, ...(taintsGone(existing, desired) ? { taints: null } : {}) },
        });
      await api.patchStatusIfChanged(
        object,
        machineObjectStatus(m, upToDate, object.status as PreviousStatus | undefined, now, health.get(m.name)),
      );
      reports.note(object, m.sequence);
      written.add(m.name);
    },
    until,
  );
  await mirrorHealth(
    api,
    [...wanted.keys()].flatMap((name) => (written.has(name) ? [] : (machines.get(name) ?? []))),
    health,
    now,
  );
  await mirrorDeletions(api, client, log, [...machines.values()].filter(madeByController), wanted);
  await mirrorStandaloneStatus(
    api,
    client,
    view,
    [...machines.values()].filter((o) => !madeByController(o)),
    reports,
    now,
  );
  return { due: outOfDate.length, written: written.size, left: outOfDate.length - started };
}

/**
 * A MachineHealthCheck's judgement changed while its machine reported nothing new: only the machine's
 * HealthCheckSucceeded is written (the rest of its conditions as the object shows them), without reading it.
 */
async function mirrorHealth(
  api: ManagementClient,
  objects: ApiObject[],
  health: Map<string, Condition>,
  now: string,
): Promise<void> {
  const summary = (c: { status: string; reason?: string } | undefined) => c && `${c.status}/${c.reason}`;
  await forEachBounded(objects, writesInFlight, async (o) => {
    const shown = (o.status as PreviousStatus | undefined)?.conditions ?? [];
    const judged = health.get(o.metadata.name);
    if (summary(shown.find((c) => c.type === healthCheckSucceeded)) === summary(judged)) return;
    const own: Condition[] = [
      ...shown
        .filter((c) => c.type !== healthCheckSucceeded)
        .map(({ type, status, reason, message }) => ({ type, status, reason, message })),
      ...(judged ? [judged] : []),
    ];
    await api.patchStatusIfChanged(o, { conditions: apiConditions(own, shown, undefined, now) });
  });
}

/**
 * The status of Machines a user applied (a cluster's own, outside any owner), from their workflows: their
 * objects are desired state, so only the status is written (the report it shows is kept in memory).
 */
async function mirrorStandaloneStatus(
  api: ManagementClient,
  client: CaptClient,
  view: ClusterView,
  standalone: ApiObject[],
  reports: MirroredReports,
  now: string,
): Promise<void> {
  const records = new Map(view.machines.map((r) => [r.name, r]));
  const stale = standalone.filter((o) => {
    const record = records.get(o.metadata.name);
    return record && reports.sequence(o) !== String(record.sequence);
  });
  if (stale.length === 0) return;
  await forEachBounded(stale, writesInFlight, async (o) => {
    const m = await client.reportedMachineStatus(
      view.namespace,
      o.metadata.name,
      records.get(o.metadata.name)!.sequence,
    );
    if (!m) return;
    await api.patchStatusIfChanged(o, machineObjectStatus(m, true, o.status as PreviousStatus | undefined, now));
    reports.note(o, m.sequence);
  });
}

/** A change the machine's workflow refused is logged and `instead` taken; any other error goes on up. */
const loggedRefusal =
  <T>(log: Logger, machine: string, what: string, instead: T) =>
  (err: unknown): T => {
    if (!(err instanceof RejectedError)) throw err;
    log.warn({ machine, reason: err.message }, `bridge: ${what} refused`);
    return instead;
  };

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
  await forEachBounded(machines, writesInFlight, async (o) => {
    const { namespace, name, deletionTimestamp } = o.metadata;
    const record = wanted.get(name)?.record;
    if (record && deletionTimestamp && !record.deleting)
      await client
        .deleteMachine(namespace, name)
        .catch(loggedRefusal(log, `${namespace}/${name}`, 'machine deletion', undefined));
    else if (record?.deleting && !deletionTimestamp) await api.delete('Machine', namespace, name);
    else if (!record) await releaseMachineObject(api, o);
  });
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
