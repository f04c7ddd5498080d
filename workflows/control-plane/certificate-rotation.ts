/**
 * rolloutBefore.certificatesExpiryDays, as Cluster API reads it: machines whose apiserver certificate
 * expires within that many days count as outdated and are replaced by the rollout.
 */
export function expiringMachines(expiry: Record<string, string>, days: number | undefined, nowMs: number): string[] {
  if (!days) return [];
  const limit = nowMs + days * 86_400_000;
  return Object.entries(expiry)
    .filter(([, at]) => Date.parse(at) < limit)
    .map(([name]) => name);
}
