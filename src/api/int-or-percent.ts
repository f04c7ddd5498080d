/** maxSurge / maxUnavailable as a count of `replicas`: surge rounds up, unavailable down, as Cluster API does. */
export function resolveIntOrPercent(value: number | string, replicas: number, roundUp: boolean): number {
  if (typeof value === 'number') return value;
  const fraction = (Number(value.slice(0, -1)) / 100) * replicas;
  return roundUp ? Math.ceil(fraction) : Math.floor(fraction);
}
