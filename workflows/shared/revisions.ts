import type { Revision } from '../../src/contract/owner';

// Rollout history, shared by the control plane and MachineDeployments: a template that comes back moves
// to the new number, as `kubectl rollout undo` does.

/** The top-level template fields that differ, the version spelled out. */
export function describeChange(before: Record<string, unknown> | undefined, after: Record<string, unknown>): string {
  if (!before) return 'initial template';
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].filter(
    (k) => JSON.stringify(before[k]) !== JSON.stringify(after[k]),
  );
  if (!keys.length) return 'same template (restart)';
  return keys
    .map((k) => (k === 'version' ? `version ${String(before[k])} -> ${String(after[k])}` : `${k} changed`))
    .join(', ');
}

/**
 * Adds `next` as the newest revision unless it already is. Keeps the newest `limit` revisions besides the
 * current one, and any that `keep` holds on to (a MachineSet that still has machines).
 */
export function recordRevision<R extends Revision<T>, T extends { version: string }>(
  revisions: R[],
  next: Omit<R, 'revision' | 'change'>,
  limit: number,
  keep: (r: R) => boolean = () => false,
): R[] {
  const current = revisions.at(-1);
  if (current?.hash === next.hash) return revisions;
  const revision = Math.max(0, ...revisions.map((r) => r.revision)) + 1;
  const added = {
    ...next,
    revision,
    change: describeChange(
      current?.template as Record<string, unknown> | undefined,
      next.template as Record<string, unknown>,
    ),
  } as R;
  const older = revisions.filter((r) => r.hash !== next.hash);
  const kept = older.filter((r, i) => i >= older.length - limit || keep(r));
  return [...kept, added];
}
