import { resolveIntOrPercent } from '../api/int-or-percent';
import type { HealthCheckStatus } from '../contract/health-check';
import type { OwnerStatus } from '../contract/owner';
import { apiConditions, observedOf, type Observation, type PreviousStatus } from './cluster-status-out';
import type { ApiObject } from './management-client';

/** How many unhealthy machines the check tolerates before it stops remediating, from the object's own spec. */
function unhealthyLimit(check: ApiObject, expected: number): number {
  type Spec = { remediation?: { triggerIf?: { unhealthyLessThanOrEqualTo?: number | string } } };
  const limit = (check.spec as Spec | undefined)?.remediation?.triggerIf?.unhealthyLessThanOrEqualTo ?? '100%';
  return resolveIntOrPercent(limit, expected, false);
}

/**
 * A MachineHealthCheck's status as Cluster API v1beta2 writes it, from what its owner (the control plane or
 * MachineDeployment whose machines it selects) reports: the machines it watches, how many are healthy, how many
 * more it may remediate, and a RemediationAllowed condition saying why not when it may not.
 */
export function healthCheckObjectStatus(
  check: ApiObject,
  owner: OwnerStatus,
  health: HealthCheckStatus,
  previous: PreviousStatus | undefined,
  o: Observation,
): Record<string, unknown> {
  const targets = owner.machines.filter((m) => !m.deleting).map((m) => m.name);
  const unhealthy = health.expectedMachines - health.currentHealthy;
  const allowed = health.remediationAllowed
    ? Math.max(0, unhealthyLimit(check, health.expectedMachines) - unhealthy)
    : 0;
  const status = {
    expectedMachines: health.expectedMachines,
    currentHealthy: health.currentHealthy,
    remediationsAllowed: allowed,
    targets,
    conditions: apiConditions(
      [
        health.remediationAllowed
          ? { type: 'RemediationAllowed', status: 'True', reason: 'RemediationAllowed', message: health.message }
          : { type: 'RemediationAllowed', status: 'False', reason: 'TooManyUnhealthy', message: health.message },
      ],
      previous?.conditions,
      o.observed ? o.generation : undefined,
      o.now,
    ),
  };
  const observedGeneration = observedOf(o, previous);
  return observedGeneration === undefined ? status : { ...status, observedGeneration };
}
