import type { MachineRecord, OwnerStatus } from './owner';

/**
 * A page of an owner's machine records: those after `after` in (createdAt, name) order, at most `limit`.
 * Paging keeps every query answer bounded whatever the owner's size; a record that exists for the whole
 * listing is seen exactly once, because its place in that order never changes.
 */
export interface OwnerStatusPageRequest {
  /** The previous page's `machinesNext`; absent for the first page. */
  after?: string;
  limit: number;
}

/** The most records one answer carries: 1000 compact records are about 250 KB, an eighth of a payload's limit. */
export const maxRecordsPerPage = 1000;

const placeOf = (m: MachineRecord) => `${m.createdAt}/${m.name}`;

/**
 * `status` with only the requested page of its records, how many it holds in all (`machinesTotal`), and where
 * the next page starts (`machinesNext`, absent on the last). A limit of 0 answers the status without records.
 */
export function ownerStatusPage(status: OwnerStatus, request: OwnerStatusPageRequest): OwnerStatus {
  const limit = Math.max(0, Math.min(maxRecordsPerPage, Math.floor(request.limit) || 0));
  const after = request.after;
  const rest = status.machines
    .map((m) => ({ place: placeOf(m), m }))
    .filter((r) => after === undefined || r.place > after)
    .sort((a, b) => (a.place < b.place ? -1 : a.place > b.place ? 1 : 0));
  const page = rest.slice(0, limit);
  const more = rest.length > page.length && page.length > 0;
  return {
    ...status,
    machines: page.map((r) => r.m),
    machinesTotal: status.machines.length,
    ...(more ? { machinesNext: page.at(-1)!.place } : {}),
  };
}
