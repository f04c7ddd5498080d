import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import {
  clipMessage,
  healthListLimit,
  type PodEvent,
  type SystemPodProblem,
  type SystemPodsHealth,
} from '../../src/contract/cluster-health';
import type { KubeClient } from '../../src/kube/kube-client';

const eventsPerPod = 3;

const because = (reason?: string, message?: string) =>
  reason ? clipMessage(message ? `${reason}: ${message}` : reason) : undefined;

/** Why a pod does not run: a waiting container's reason, an unmet condition's (Unschedulable), or the pod's own. */
function notRunningReason(pod: V1Pod): string | undefined {
  const waiting = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])].find(
    (c) => c.state?.waiting?.reason,
  )?.state?.waiting;
  const unmet = pod.status?.conditions?.find((c) => c.status === 'False' && c.reason);
  return (
    because(waiting?.reason, waiting?.message) ??
    because(unmet?.reason, unmet?.message) ??
    because(pod.status?.reason, pod.status?.message)
  );
}

const eventTime = (e: CoreV1Event) => new Date(e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ?? 0).getTime();

async function lastEvents(kube: KubeClient, pod: string): Promise<PodEvent[]> {
  const events = await kube.listEvents('kube-system', `involvedObject.kind=Pod,involvedObject.name=${pod}`);
  return events
    .sort((a, b) => eventTime(a) - eventTime(b))
    .slice(-eventsPerPod)
    .map((e) => ({
      type: e.type ?? 'Normal',
      reason: e.reason ?? '',
      message: clipMessage(e.message ?? ''),
      count: e.count ?? 1,
      last: eventTime(e) ? new Date(eventTime(e)).toISOString() : undefined,
    }));
}

/** kube-system pods that are neither Running nor Completed, with why and their last events; the first few by name. */
export async function systemPodsHealth(kube: KubeClient, pods: V1Pod[]): Promise<SystemPodsHealth> {
  const stuck = pods
    .filter((p) => p.status?.phase !== 'Running' && p.status?.phase !== 'Succeeded')
    .sort((a, b) => a.metadata!.name!.localeCompare(b.metadata!.name!));
  const problems = await Promise.all(
    stuck.slice(0, healthListLimit).map(async (pod): Promise<SystemPodProblem> => ({
      name: pod.metadata!.name!,
      phase: pod.status?.phase ?? 'Unknown',
      node: pod.spec?.nodeName,
      reason: notRunningReason(pod),
      events: await lastEvents(kube, pod.metadata!.name!),
    })),
  );
  return { total: pods.length, problems, problemsOmitted: Math.max(0, stuck.length - healthListLimit) };
}
