/**
 * Runs `work` on every item with at most `limit` in flight, a new one starting as soon as one ends (not in
 * waves, so one slow item holds back only its own slot); none starts after `until` (ms since the epoch), and
 * the rest are left undone. Rejects with the first failure, after every started item has settled.
 */
export async function forEachBounded<T>(
  items: T[],
  limit: number,
  work: (item: T) => Promise<void>,
  until = Infinity,
): Promise<void> {
  let next = 0;
  const failures: unknown[] = [];
  const lane = async () => {
    while (next < items.length && failures.length === 0 && Date.now() < until) {
      const item = items[next++]!;
      await work(item).catch((err: unknown) => void failures.push(err));
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  if (failures.length) throw failures[0];
}
