import { proxyActivities, setCurrentDetails } from '@temporalio/workflow';
import type * as activities from '../../activities';
import type { ClusterHealth, ClusterHealthInput } from '../../src/contract/cluster-health';
import type { UnknownSignal } from '../../src/contract/unknown-signals';
import { rethrowActivityCause } from '../shared/activity-cause';
import { recordUnknownSignals, unknownSignalsDetails } from '../shared/unknown-signals';

const { checkClusterHealth } = proxyActivities<typeof activities>({
  // Each probe and list inside has its own limit of seconds; the whole check is one heartbeating activity.
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '20 seconds',
  retry: { maximumAttempts: 3, initialInterval: '1 second' },
  summary: 'check etcd, control-plane components, Nodes and kube-system pods',
});

/**
 * `capt health cluster`: one check, in a workflow of its own (`health/<ns>/<cluster>/<id>`) that the client
 * starts and waits for, so the cluster workflow's history does not grow with each check. A worker runs it,
 * as only workers read the cluster's credentials (from the cluster workflow).
 */
export async function clusterHealthWorkflow(input: ClusterHealthInput): Promise<ClusterHealth> {
  // It has no status to carry them: its details (the UI) and the log show them.
  const unknownSignals: UnknownSignal[] = [];
  recordUnknownSignals(unknownSignals, () => setCurrentDetails(unknownSignalsDetails(unknownSignals).trim()));
  // The activity's own failure (the cluster's secrets unreadable) is what the client should read.
  return checkClusterHealth(input).catch(rethrowActivityCause);
}
