/**
 * `CAPT_MAX_CACHED_WORKFLOWS` (`capt worker --max-cached-workflows N`): how many workflow runs each of the worker's
 * two workflow queues keeps in memory between their tasks. A run evicted from the cache is replayed from its
 * history on its next task, so the bound trades the worker's memory for replay CPU (bench/results/worker-cache-*).
 * The SDK's own default follows the heap's size (about 2,300 per queue with a 4 GiB heap), so a worker's memory
 * would follow the host's; capt's is fixed, and keeps a 1,000-worker MachineDeployment whole through a rollout.
 */
export const defaultMaxCachedWorkflows = 2000;

/** The bound as set, or capt's default; a value that is not a whole number of at least 2 is refused, naming where it came from. */
export function maxCachedWorkflows(value: string | undefined, setting = 'CAPT_MAX_CACHED_WORKFLOWS'): number {
  if (value === undefined || value === '') return defaultMaxCachedWorkflows;
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || n < 2)
    throw new Error(
      `${setting} ${value}: give a whole number of workflow runs to keep cached, at least 2 (default ${defaultMaxCachedWorkflows})`,
    );
  return n;
}
