import type { WorkflowHandle } from '@temporalio/client';
import { ownerStatusQuery } from '../contract/cluster-messages';
import type { MachineRecord, OwnerStatus } from '../contract/owner';
import { maxRecordsPerPage } from '../contract/owner-status-page';
import { queryWithRetry } from './query-with-retry';

/**
 * An owner's status with all its records, read page by page so that no one answer grows with the owner.
 * The summary fields are the first page's. An owner of an earlier build answers every record at once
 * (no `machinesTotal`), and that answer is taken as it is.
 */
export async function ownerStatusAllPages(handle: WorkflowHandle, pageSize = maxRecordsPerPage): Promise<OwnerStatus> {
  const first = await queryWithRetry(handle, ownerStatusQuery, { limit: pageSize });
  if (first.machinesTotal === undefined) return first;
  const machines: MachineRecord[] = [...first.machines];
  for (let after = first.machinesNext; after !== undefined;) {
    const page = await queryWithRetry(handle, ownerStatusQuery, { after, limit: pageSize });
    machines.push(...page.machines);
    after = page.machinesNext;
  }
  const { machinesNext: _next, machinesTotal: _total, ...status } = first;
  return { ...status, machines };
}
