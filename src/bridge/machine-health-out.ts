import { machineHealthCheckV1beta2 } from '../api/kinds/cluster-api';
import type { Condition } from '../contract/machine';
import type { OwnerStatus } from '../contract/owner';
import { healthCheckConditions } from '../../workflows/shared/machine-health';
import { asManifest } from './cluster-documents';
import type { ApiObject } from './management-client';

/** The condition a MachineHealthCheck sets on each Machine it judges (Cluster API v1beta2). */
export const healthCheckSucceeded = 'HealthCheckSucceeded';

/**
 * HealthCheckSucceeded for each machine of `owners` that a MachineHealthCheck object (`checks`, of the owners'
 * namespace) selects, as that check judges it now: the owner's records hold everything it judges by, so no machine
 * is read for it. An owner whose check's object is gone or no longer loads gets none.
 */
export function machineHealthConditions(
  owners: OwnerStatus[],
  checks: ApiObject[],
  nowMs: number,
): Map<string, Condition> {
  const out = new Map<string, Condition>();
  for (const owner of owners) {
    const check = checks.find((c) => c.metadata.name === owner.healthCheck?.name);
    if (!check) continue;
    const parsed = machineHealthCheckV1beta2.safeParse(asManifest(check));
    if (!parsed.success) continue;
    const spec = { ...parsed.data, name: check.metadata.name };
    for (const [machine, condition] of healthCheckConditions(spec, owner.machines, nowMs)) out.set(machine, condition);
  }
  return out;
}
