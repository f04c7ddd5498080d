import type { Condition } from './machine';
import type { OwnerStatus, OwnerSummary } from './owner';

/** What the cluster workflow's status query answers: its own state and its children's summaries. */
export interface ClusterStatus {
  namespace: string;
  name: string;
  provider: string;
  phase: 'Provisioning' | 'Provisioned' | 'Deleting' | 'Deleted' | 'Failed';
  version: string;
  endpoint: string;
  createdAt: string;
  controlPlane?: OwnerSummary;
  machineDeployments: OwnerSummary[];
  conditions: Condition[];
  step: string;
}

/** A cluster as the client shows it: its status with each owner's full status, read from the owner itself. */
export interface ClusterView extends Omit<ClusterStatus, 'controlPlane' | 'machineDeployments'> {
  controlPlane?: OwnerStatus;
  machineDeployments: OwnerStatus[];
}

/** Template hashes a cluster's owners run now, which an undo may have moved away from the last manifest's. */
export interface RunningTemplates {
  controlPlane?: string;
  machineDeployments: Record<string, string | undefined>;
}
