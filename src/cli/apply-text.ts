import type { AppliedObject } from '../client/capt-client';

const machines = (n: number) => `${n} machine${n === 1 ? '' : 's'}`;

/**
 * One object of `capt apply` as kubectl prints it (`… configured`, `… configured (dry run)`), and for a
 * dry run what its machines would go through, one indented line each.
 */
export function appliedText(o: AppliedObject, dryRun: boolean): string {
  const p = o.preview;
  const removed = typeof p?.removed === 'number' ? p.removed : (p?.removed.length ?? 0);
  return [
    `${o.ref} ${o.outcome}${dryRun ? ' (dry run)' : ''}`,
    ...(o.upgradePlan?.length ? ['  upgrade plan:'] : []),
    ...(o.upgradePlan ?? []).map(
      (s, i) =>
        `    ${i + 1}. ${s.owner} ${s.from} -> ${s.to}: ${s.available ? 'available' : 'MAY BE UNAVAILABLE'}; ${s.note}`,
    ),
    ...(p?.updatedInPlace?.length
      ? [
          `  would update ${machines(p.updatedInPlace.length)} in place${p.replacedWhen ? ` ${p.replacedWhen}` : ''}: ${p.updatedInPlace.join(', ')}`,
        ]
      : []),
    ...(p?.replaced.length
      ? [
          `  would replace ${machines(p.replaced.length)}${p.replacedWhen ? ` ${p.replacedWhen}` : ''}${p.replacedWhy ? ` (not in place: ${p.replacedWhy})` : ''}: ${p.replaced.join(', ')}`,
        ]
      : []),
    ...(p?.added ? [`  would add ${machines(p.added)}`] : []),
    ...(removed
      ? [
          `  would remove ${machines(removed)}${typeof p!.removed === 'number' ? ' (which ones is decided as each leaves)' : `: ${p!.removed.join(', ')}`}`,
        ]
      : []),
  ].join('\n');
}
