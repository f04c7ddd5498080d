/** The pod capacity a kubelet's `max-pods` may give a Node, as capt's providers hold it. */
export const maxPodsRange = { min: 1, max: 10_000 };

/** A kubelet's `max-pods` value: a whole number in maxPodsRange, or none (the kubelet's default). */
export function maxPods(value: unknown): number | undefined {
  const pods = typeof value === 'string' || typeof value === 'number' ? Number(value) : NaN;
  return Number.isInteger(pods) && pods >= maxPodsRange.min && pods <= maxPodsRange.max ? pods : undefined;
}
