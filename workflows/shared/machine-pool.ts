import { proxyActivities, uuid4 } from '@temporalio/workflow';
import type * as coreActivities from '../../activities';
import { MachinePhase, type MachineReport, type MachineSpec } from '../../src/contract/machine';
import type { MachineRecord } from '../../src/contract/owner';
import type { InPlaceUpdateRequest } from '../../src/contract/in-place';
import { activityRetry } from './activity-retry';

/**
 * The machines an owner (control plane, MachineDeployment) holds, as compact records, and the few ways
 * it acts on them. Machines are workflows of their own, started (and told to go) by an activity rather
 * than as children, so none of it queues on the owner's history; they report back through
 * machineReportSignal and outlive the owner's continue-as-new.
 */

/** Machines per fan-out activity: its input (full specs) stays far below Temporal's payload limits. */
const fanOutBatch = 50;

/**
 * Machines one run may start before it continues as new: each reports to the run current when it
 * changes, so a busy scale-up still moves to a fresh, small history every few hundred machines.
 */
export const startsPerRun = 250;

const fanOut = proxyActivities<typeof coreActivities>({
  startToCloseTimeout: '5m',
  heartbeatTimeout: '30s',
  retry: activityRetry,
});

const chunks = <T>(items: T[]): T[][] =>
  Array.from({ length: Math.ceil(items.length / fanOutBatch) }, (_, i) =>
    items.slice(i * fanOutBatch, (i + 1) * fanOutBatch),
  );

/**
 * Fresh, deterministic machine names, `<base>-<5 chars>` as Cluster API names them, none of them `taken`:
 * 1000 random names of 5 hex characters would collide more often than not.
 */
export function newMachineNames(base: string, count: number, taken: Iterable<string>): string[] {
  const used = new Set(taken);
  const names: string[] = [];
  // Replicas are bounded far below the 16^5 suffixes, so this ends; the bound only keeps a bug from looping forever.
  for (let tries = 0; names.length < count; tries++) {
    if (tries > 100 * count + 1000)
      throw new Error(`no free machine name ${base}-xxxxx after ${tries} tries: ${used.size} are taken`);
    const name = `${base}-${uuid4().replace(/-/g, '').slice(0, 5)}`;
    if (used.has(name)) continue;
    used.add(name);
    names.push(name);
  }
  return names;
}

export const newRecord = (
  name: string,
  templateHash: string,
  version: string,
  createdAt: string,
  failureDomain?: string,
): MachineRecord => ({
  name,
  templateHash,
  version,
  ...(failureDomain ? { failureDomain } : {}),
  createdAt,
  phase: MachinePhase.Provisioning,
  deleting: false,
  marked: false,
  sequence: -1,
});

/**
 * Starts machines, fanOutBatch per activity, the activities concurrently. Returns the names that could
 * not start (a machine of that name existed before): the owner drops them and its next plan picks new names.
 */
export async function startPoolMachines(
  specs: { spec: MachineSpec; summary: string; templateHash?: string }[],
): Promise<string[]> {
  const refused = await Promise.all(
    chunks(specs).map((machines) => fanOut.startMachineWorkflows({ batch: uuid4(), machines })),
  );
  return refused.flat();
}

/**
 * Asks running machines to take a newer version in place, fanOutBatch per activity, concurrently. Returns the
 * names that refused (gone, no longer running, or on a build without in-place updates): their owner replaces them.
 */
export async function updatePoolMachinesInPlace(
  namespace: string,
  names: string[],
  request: InPlaceUpdateRequest,
): Promise<string[]> {
  const refused = await Promise.all(
    chunks(names).map((batch) => fanOut.requestInPlaceUpdates({ namespace, names: batch, request })),
  );
  return refused.flat();
}

/** Asks machines to delete themselves, fanOutBatch per activity, concurrently. */
export async function deletePoolMachines(namespace: string, names: string[], clusterDeleting: boolean): Promise<void> {
  await Promise.all(
    chunks(names).map((batch) => fanOut.requestMachineDeletions({ namespace, names: batch, clusterDeleting })),
  );
}

/** Applies a machine's report (received at `now`) to the records: the newest one wins; Deleted removes it. */
export function recordMachineReport(machines: MachineRecord[], report: MachineReport, now: string): MachineRecord[] {
  return recordMachineReports(machines, [report], now);
}

/** Applies several reports in one pass over the records (a thousand of them, in a MachineDeployment). */
export function recordMachineReports(
  machines: MachineRecord[],
  reports: MachineReport[],
  now: string,
): MachineRecord[] {
  const byName = new Map<string, MachineReport[]>();
  for (const r of reports) {
    const own = byName.get(r.name);
    if (own) own.push(r);
    else byName.set(r.name, [r]);
  }
  // A loop, not flatMap: it runs at every report over up to 5,000 records, and replays run it again.
  const out: MachineRecord[] = [];
  for (const m of machines) {
    const own = byName.get(m.name);
    if (!own) out.push(m);
    else if (!own.some((r) => r.phase === MachinePhase.Deleted))
      out.push(own.reduce<MachineRecord>((record, r) => withReport(record, r, now), m));
  }
  return out;
}

function withReport(m: MachineRecord, report: MachineReport, now: string): MachineRecord {
  if (m.sequence > report.sequence) return m;
  const running = report.phase === MachinePhase.Running;
  // An in-place update ends with a report of the version (and, from machines that say it, the set) the owner asked
  // for, no longer updating: a report sent before the machine took the request says neither.
  const staleSet = report.templateHash !== undefined && report.templateHash !== m.templateHash;
  const updating = m.updating && (report.version !== m.version || !!report.updating || staleSet);
  const {
    blocker: _blocker,
    address: _address,
    runningSince: _since,
    node: _node,
    remediate: _remediate,
    skipRemediation: _skip,
    updating: _updating,
    ...rest
  } = m;
  return {
    ...rest,
    phase: report.phase,
    marked: report.marked,
    sequence: report.sequence,
    deleting: m.deleting || report.phase === MachinePhase.Deleting,
    ...(report.address ? { address: report.address } : m.address ? { address: m.address } : {}),
    ...(report.blocker ? { blocker: report.blocker } : {}),
    ...(report.node ? { node: report.node } : {}),
    ...(report.remediate ? { remediate: true } : {}),
    ...(report.skipRemediation ? { skipRemediation: true } : {}),
    ...(updating ? { updating: true as const } : running ? { runningSince: m.runningSince ?? now } : {}),
  };
}

/** Running, not leaving, and its Node there and Ready: what ready replicas and rollout budgets count, as Cluster API's Node-based readiness does. */
export const isRunning = (m: MachineRecord) =>
  m.phase === MachinePhase.Running &&
  !m.deleting &&
  !m.updating &&
  !m.node?.gone &&
  !m.node?.conditions.some((c) => c.type === 'Ready');

/** A machine that still has a report to make: it has not run yet, or is changing in place, or going. */
export const reportComing = (m: MachineRecord) => m.deleting || !!m.updating || m.phase === MachinePhase.Provisioning;

/**
 * Whether a machine has been running for at least minReadySeconds at `nowMs`, for many machines at one time: the
 * bound is made once, and a record's time (the workflow's own `toISOString()`) compared as text, which orders as
 * time does; any other spelling is parsed. Parsing every record's time was a fifth of an owner's replay at 5,000.
 */
export function availability(minReadySeconds: number, nowMs: number): (m: MachineRecord) => boolean {
  const bound = nowMs - minReadySeconds * 1000;
  const boundText = new Date(bound).toISOString();
  const comparable = boundText.length === 24;
  const canonical = (t: string) => comparable && t.length === 24 && t[10] === 'T' && t[23] === 'Z';
  return (m) =>
    isRunning(m) &&
    !!m.runningSince &&
    (canonical(m.runningSince) ? m.runningSince <= boundText : Date.parse(m.runningSince) <= bound);
}
