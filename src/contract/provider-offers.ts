/** A failure domain a cluster's infrastructure declares: a name, and whether control-plane machines go there. */
export interface FailureDomain {
  name: string;
  controlPlane: boolean;
}

/**
 * The failure domains a cluster's infrastructure object declares (a LocalCluster's spec.failureDomains, as its
 * kind's schema read them into the model), in their declared order; none when it declares none.
 */
export function clusterFailureDomains(infrastructureSpec: Record<string, unknown> | undefined): FailureDomain[] {
  return (infrastructureSpec?.failureDomains as FailureDomain[] | undefined) ?? [];
}
