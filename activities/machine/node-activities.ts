import type { V1Node } from '@kubernetes/client-node';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { drainProgressSignal } from '../../src/contract/machine-messages';
import type { DrainProgress, NodeSystemInfo } from '../../src/contract/machine';
import { blockingReasons, drainPass } from '../drain/drain';
import { pollWithHeartbeat, waitHeartbeat } from '../../src/util/heartbeat-poll';
import type { KubeClient } from '../../src/kube/kube-client';
import { nodeWatch } from '../kube/node-watch';
import { workloadClient } from '../kube/workload-cluster';
import { nodeSystemInfo } from './node-system-info';
import { nodeTaints, taintsFromMachineAnnotation } from './node-taints';
import type { MachineTaint } from '../../src/contract/machine';

/** Activities on a machine's Node in the workload cluster. Each is idempotent. */
export interface NodeTarget {
  namespace: string;
  cluster: string;
}

/** A waiting activity reports progress at least this often. */
const heartbeatEveryMs = 5000;

// Cluster API syncs only labels in these domains to the Node; others belong to the Node's own managers.
const syncedLabel =
  /^(node-role\.kubernetes\.io|node-restriction\.kubernetes\.io|node\.cluster\.x-k8s\.io)\/|^[^/]*\.(node-restriction\.kubernetes\.io|node\.cluster\.x-k8s\.io)\//;

type Readiness = { ready: 'True' | 'False' | 'Unknown'; message?: string };

/**
 * Waits (heartbeating) for a Ready Node with the providerID, then syncs it (see syncNode) and returns its system
 * info, which the machine's status shows; undefined when `timeoutSeconds` passes first. The cluster's one Node
 * watch wakes it when its Node changes.
 */
export async function waitForNode(
  target: NodeTarget & {
    providerID: string;
    timeoutSeconds: number;
    labels: Record<string, string>;
    annotations: Record<string, string>;
    taints?: MachineTaint[];
    /** After an in-place update: the Node must also report this kubelet version. */
    kubeletVersion?: string;
  },
): Promise<{ nodeName: string; readiness: Readiness; nodeInfo?: NodeSystemInfo } | undefined> {
  const ctx = Context.current();
  const client = await workloadClient(target.namespace, target.cluster);
  const nodes = nodeWatch(`${target.namespace}/${target.cluster}`, client);
  const release = nodes.hold();
  const started = Date.now();
  const heartbeat = waitHeartbeat(ctx);
  const deadline = started + target.timeoutSeconds * 1000;
  try {
    for (;;) {
      const node = nodes.node(target.providerID);
      const condition = node?.status?.conditions?.find((c) => c.type === 'Ready');
      // Registered is not enough: a kubelet reports Ready a moment later, and owners count Running machines as serving.
      const running = node?.status?.nodeInfo?.kubeletVersion;
      const versionOk = !target.kubeletVersion || running === target.kubeletVersion;
      if (node && condition?.status === 'True' && versionOk)
        return {
          nodeName: node.metadata!.name!,
          readiness: await syncNodeObject(client, node, target, true),
          nodeInfo: nodeSystemInfo(node.status?.nodeInfo),
        };
      const seen = !node
        ? `no Node with that providerID yet${nodes.lastError ? ` (watching Nodes failed: ${nodes.lastError})` : ''}`
        : !versionOk
          ? `Node ${node.metadata!.name} runs kubelet ${running ?? '(none reported)'}, not ${target.kubeletVersion} yet`
          : `Node ${node.metadata!.name} registered, not Ready yet${condition?.message ? `: ${condition.message}` : ''}`;
      heartbeat(`${seen} (${Math.round((Date.now() - started) / 1000)}s)`);
      if (Date.now() >= deadline) return undefined;
      // A cancelled activity ends here at once: the sleep rejects.
      await Promise.race([
        nodes.changeOf(target.providerID, heartbeatEveryMs),
        ctx.sleep(Math.min(heartbeatEveryMs, Math.max(0, deadline - Date.now()))),
      ]);
    }
  } finally {
    release();
  }
}

/** What a machine keeps on its Node. */
interface NodeFields {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** Absent: none (a machine made before taints were carried). */
  taints?: MachineTaint[];
}

/**
 * Puts the Machine's labels, annotations and `Always` taints on its Node (nodeTaints says how), and returns the
 * Node's readiness.
 */
export async function syncNode(target: NodeTarget & NodeFields & { nodeName: string }): Promise<Readiness> {
  const client = await workloadClient(target.namespace, target.cluster);
  const node = await client.getNode(target.nodeName);
  if (!node) throw ApplicationFailure.create({ message: `Node ${target.nodeName} disappeared`, type: 'NodeNotFound' });
  return syncNodeObject(client, node, target, false);
}

/** The sync; `initializing` when the Node has just joined: its `OnInitialization` taints go on with the rest. */
async function syncNodeObject(
  client: KubeClient,
  node: V1Node,
  machine: NodeFields,
  initializing: boolean,
): Promise<Readiness> {
  const labels = Object.fromEntries(Object.entries(machine.labels).filter(([k]) => syncedLabel.test(k)));
  const tracked = node.metadata?.annotations?.[taintsFromMachineAnnotation];
  const { taints, tracked: nowTracked } = nodeTaints(
    node.spec?.taints ?? [],
    tracked,
    machine.taints ?? [],
    initializing,
  );
  // The annotation only where a machine has had Always taints: a Node of a machine without any is written as before.
  const annotations =
    nowTracked || tracked !== undefined
      ? { ...machine.annotations, [taintsFromMachineAnnotation]: nowTracked }
      : machine.annotations;
  await client.patchNode(node.metadata!.name!, { metadata: { labels, annotations }, spec: { taints } });
  const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
  return {
    ready: (ready?.status as Readiness['ready'] | undefined) ?? 'Unknown',
    ...(ready?.message ? { message: ready.message } : {}),
  };
}

/**
 * Drains the Node: passes until it is empty or `deadline` (epoch ms) passes. Heartbeats each pass and
 * signals the machine workflow whenever what blocks the drain changes, so the UI says why it waits.
 */
export async function drainNode(
  target: NodeTarget & { nodeName: string; deadline?: number },
): Promise<DrainProgress & { done: boolean; volumesAttached?: number }> {
  const ctx = Context.current();
  const client = await workloadClient(target.namespace, target.cluster);
  const workflowId = ctx.info.workflowExecution?.workflowId;
  const evicted = new Set<string>();
  let last: DrainProgress = { evicted: 0, remaining: 0, blocked: [], warnings: [] };
  // Nothing blocked is what the workflow assumes: a drain that never blocks costs it no signal.
  let reported = '[]';
  const result = await pollWithHeartbeat(
    async () => {
      const pass = await drainPass(client, target.nodeName);
      pass.evicted.forEach((p) => evicted.add(p));
      last = {
        evicted: evicted.size,
        remaining: pass.blocked.length + pass.waiting.length,
        blocked: blockingReasons(pass),
        warnings: pass.warnings.slice(0, 5),
      };
      const key = JSON.stringify(last.blocked);
      if (key !== reported) {
        reported = key;
        if (workflowId) await ctx.client.workflow.getHandle(workflowId).signal(drainProgressSignal, last);
      }
      return pass.done ? { ...last, done: true, volumesAttached: pass.volumesAttached } : undefined;
    },
    { intervalMs: 2000, deadline: target.deadline, progress: () => last },
  );
  return result ?? { ...last, done: false };
}

/** Waits for the Node to report no attached volumes; `done: false` when the deadline passes first. */
export async function waitForVolumeDetach(
  target: NodeTarget & { nodeName: string; deadline?: number },
): Promise<{ done: boolean; attached: string[] }> {
  const client = await workloadClient(target.namespace, target.cluster);
  let attached: string[] = [];
  const done = await pollWithHeartbeat(
    async () => {
      const node = await client.getNode(target.nodeName);
      attached = (node?.status?.volumesAttached ?? []).map((v) => v.name).sort();
      return attached.length === 0 ? true : undefined;
    },
    { intervalMs: 2000, deadline: target.deadline, progress: () => `volumes still attached: ${attached.join(', ')}` },
  );
  return { done: done === true, attached };
}

/**
 * Deletes the Node, named or found by providerID (a fresh list: the machine's infrastructure is gone, so
 * no Node for it can register after this); gone already is success. Retried until nodeDeletionTimeout.
 */
export async function deleteNode(target: NodeTarget & ({ nodeName: string } | { providerID: string })): Promise<void> {
  const client = await workloadClient(target.namespace, target.cluster);
  const names =
    'nodeName' in target
      ? [target.nodeName]
      : (await client.listNodes())
          .filter((n) => n.spec?.providerID === target.providerID)
          .map((n) => n.metadata!.name!);
  for (const name of names) await client.deleteNode(name);
}
