import type { V1Node, V1Pod } from '@kubernetes/client-node';
import type { KubeClient } from '../../src/kube/kube-client';

/**
 * Node drain as Cluster API does it, one pass at a time: cordon, sort the node's pods through an ordered
 * filter pipeline, evict the ones that must go, and report. The caller repeats passes until `done`.
 */
export const drainLabel = 'cluster.x-k8s.io/drain';
const mirrorAnnotation = 'kubernetes.io/config.mirror';

type PodDecision =
  { action: 'skip'; reason: string } | { action: 'wait'; reason: string } | { action: 'evict'; warning?: string };

export interface DrainPassResult {
  evicted: string[];
  /** Pods a disruption budget protects, with the apiserver's explanation. */
  blocked: { pod: string; message: string }[];
  /** Evicted or deleted pods that are still terminating, and wait-completed pods still running. */
  waiting: { pod: string; reason: string }[];
  skipped: { pod: string; reason: string }[];
  warnings: string[];
  /** Nothing left to evict or wait for. */
  done: boolean;
  /** Volumes the Node reported attached when this pass began (none once drained means none to wait for). */
  volumesAttached: number;
}

const podName = (p: V1Pod) => `${p.metadata!.namespace}/${p.metadata!.name}`;

export function nodeUnreachable(node: V1Node | undefined): boolean {
  return node?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'Unknown';
}

/** The filter pipeline: the first rule that decides, wins. */
async function decide(pod: V1Pod, client: KubeClient, unreachable: boolean, now: number): Promise<PodDecision> {
  const meta = pod.metadata!;
  if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed')
    return { action: 'skip', reason: 'completed' };
  if (meta.annotations?.[mirrorAnnotation] !== undefined) return { action: 'skip', reason: 'mirror pod' };
  const owner = meta.ownerReferences?.find((o) => o.controller);
  if (owner?.kind === 'DaemonSet' && (await client.daemonSetExists(meta.namespace!, owner.name)))
    return { action: 'skip', reason: `managed by DaemonSet ${owner.name}` };
  if (meta.labels?.[drainLabel] === 'skip') return { action: 'skip', reason: `labelled ${drainLabel}=skip` };
  if (meta.deletionTimestamp) {
    // On an unreachable node, pods terminating for more than a second will never report back.
    const since = now - new Date(meta.deletionTimestamp).getTime() + (meta.deletionGracePeriodSeconds ?? 0) * 1000;
    if (unreachable && since > 1000) return { action: 'skip', reason: 'terminating on an unreachable node' };
    return { action: 'wait', reason: 'terminating' };
  }
  if (meta.labels?.[drainLabel] === 'wait-completed')
    return { action: 'wait', reason: `labelled ${drainLabel}=wait-completed, waiting for it to complete` };
  const warnings: string[] = [];
  if (!owner) warnings.push('has no controller: it will not be recreated');
  if (pod.spec?.volumes?.some((v) => v.emptyDir)) warnings.push('uses emptyDir: its local data is lost');
  return { action: 'evict', ...(warnings.length ? { warning: `${podName(pod)} ${warnings.join('; ')}` } : {}) };
}

export async function drainPass(client: KubeClient, nodeName: string, now = Date.now()): Promise<DrainPassResult> {
  const node = await client.getNode(nodeName);
  const result: DrainPassResult = {
    evicted: [],
    blocked: [],
    waiting: [],
    skipped: [],
    warnings: [],
    done: false,
    volumesAttached: node?.status?.volumesAttached?.length ?? 0,
  };
  if (!node) return { ...result, done: true };
  await client.cordon(nodeName);
  const unreachable = nodeUnreachable(node);
  const pods = (await client.podsOnNode(nodeName)).sort((a, b) => podName(a).localeCompare(podName(b)));
  for (const pod of pods) {
    const decision = await decide(pod, client, unreachable, now);
    if (decision.action === 'skip') result.skipped.push({ pod: podName(pod), reason: decision.reason });
    else if (decision.action === 'wait') result.waiting.push({ pod: podName(pod), reason: decision.reason });
    else {
      if (decision.warning) result.warnings.push(decision.warning);
      // Each pod's own grace period, except on an unreachable node, where nothing would honour it.
      const outcome = await client.evict(pod.metadata!.namespace!, pod.metadata!.name!, unreachable ? 1 : undefined);
      if (outcome.outcome === 'blocked') result.blocked.push({ pod: podName(pod), message: outcome.message });
      else if (outcome.outcome === 'evicted') {
        result.evicted.push(podName(pod));
        result.waiting.push({ pod: podName(pod), reason: 'evicted, terminating' });
      }
    }
  }
  result.done = result.blocked.length === 0 && result.waiting.length === 0;
  return result;
}

/** One line per reason the drain is not finished, sorted and truncated so messages are stable. */
export function blockingReasons(result: DrainPassResult, limit = 5): string[] {
  const lines = [
    ...result.blocked.map((b) => `pod ${b.pod} blocked by disruption budget: ${b.message}`),
    ...result.waiting.map((w) => `pod ${w.pod} ${w.reason}`),
  ].sort();
  return lines.length > limit ? [...lines.slice(0, limit), `... and ${lines.length - limit} more`] : lines;
}
