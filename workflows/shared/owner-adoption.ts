import { proxyActivities } from '@temporalio/workflow';
import type * as coreActivities from '../../activities';
import type { MachineReport } from '../../src/contract/machine';
import type {
  ClusterFacts,
  MachineOwnerKind,
  MachineRecord,
  OwnerAdoption,
  OwnerSummary,
} from '../../src/contract/owner';
import { newRecord, recordMachineReport } from './machine-pool';
import { activityRetry } from './activity-retry';

/**
 * A lost owner rebuilt by its cluster: it adopts, page by page, the machine workflows that name it as
 * their owner, and only then plans, so no machine is created twice and none is left without an owner.
 */

/** Why the cluster rebuilt an owner, what it last heard of the lost one, and whether it is deleting it. */
export interface OwnerRebuild {
  cause: string;
  previous?: OwnerSummary;
  deleting?: { clusterDeleting: boolean };
}

/** Where an adoption stands, across continue-as-new. */
export interface AdoptionProgress {
  /** The last machine name looked at; the next page starts after it. */
  after?: string;
  /** Reports of machines not adopted yet (the newest per machine): applied as each one is adopted. */
  early: MachineReport[];
}

/** What a rebuilt owner's state starts with besides its spec: the adoption to run, its report count, and a deletion already asked for. */
export function rebuiltOwnerState(
  rebuild: OwnerRebuild,
  now: string,
): {
  adoption: OwnerAdoption;
  adoptionProgress: AdoptionProgress;
  reports: number;
  deleting?: { clusterDeleting: boolean };
} {
  return {
    adoption: { cause: rebuild.cause, at: now, adopted: 0, complete: false },
    adoptionProgress: { early: [] },
    // The cluster keeps the newest summary by sequence: the rebuilt owner's go on from the lost one's.
    reports: rebuild.previous?.sequence ?? 0,
    ...(rebuild.deleting ? { deleting: rebuild.deleting } : {}),
  };
}

/** Keeps a report that arrives while adopting, from a machine not adopted yet; false when the report can be applied now. */
export function holdEarlyReport(
  progress: AdoptionProgress | undefined,
  machines: MachineRecord[],
  report: MachineReport,
): boolean {
  if (!progress || machines.some((m) => m.name === report.name)) return false;
  const kept = progress.early.find((r) => r.name === report.name);
  if (!kept || kept.sequence < report.sequence)
    progress.early = [...progress.early.filter((r) => r.name !== report.name), report];
  return true;
}

/**
 * Adds adopted records to `machines`, each with the reports that came before it applied (a machine that
 * reported Deleted meanwhile is not adopted). Returns how many were added.
 */
export function adoptRecords(
  machines: MachineRecord[],
  progress: AdoptionProgress,
  records: MachineRecord[],
  now: string,
): number {
  let added = 0;
  for (const record of records) {
    if (machines.some((m) => m.name === record.name)) continue;
    const early = progress.early.find((r) => r.name === record.name);
    progress.early = progress.early.filter((r) => r.name !== record.name);
    const adopted = early ? recordMachineReport([record], early, now) : [record];
    machines.push(...adopted);
    added += adopted.length;
  }
  return added;
}

/**
 * Machines that reported to this owner but no listing showed (started just before the lost owner went):
 * theirs all the same. Their template is unknown, so a rollout replaces them.
 */
export function adoptUnlisted(
  machines: MachineRecord[],
  progress: AdoptionProgress,
  version: string,
  now: string,
): number {
  const unlisted = progress.early.map((r) => newRecord(r.name, '', version, now));
  return adoptRecords(machines, progress, unlisted, now);
}

const survey = proxyActivities<typeof coreActivities>({
  startToCloseTimeout: '5m',
  heartbeatTimeout: '30s',
  retry: activityRetry,
});

/**
 * Runs a rebuilt owner's adoption to the end (a no-op for an owner that was never lost). `onPage` publishes
 * progress; `checkpoint` may continue as new between pages, and the next run resumes where this one stopped.
 */
export async function adoptMachines(o: {
  kind: MachineOwnerKind;
  facts: ClusterFacts;
  name: string;
  version: () => string;
  state: { machines: MachineRecord[]; adoption?: OwnerAdoption; adoptionProgress?: AdoptionProgress };
  onPage: () => void;
  checkpoint: () => Promise<void>;
}): Promise<void> {
  const { state } = o;
  while (state.adoption && state.adoptionProgress && !state.adoption.complete) {
    const progress = state.adoptionProgress;
    const page = await survey.listOwnedMachines({
      namespace: o.facts.namespace,
      cluster: o.facts.name,
      owner: { kind: o.kind, name: o.name },
      after: progress.after,
    });
    const now = new Date().toISOString();
    state.adoption.adopted += adoptRecords(state.machines, progress, page.records, now);
    progress.after = page.after;
    if (page.after === undefined) {
      state.adoption.adopted += adoptUnlisted(state.machines, progress, o.version(), now);
      state.adoption.complete = true;
      state.adoptionProgress = undefined;
    }
    o.onPage();
    await o.checkpoint();
  }
}
