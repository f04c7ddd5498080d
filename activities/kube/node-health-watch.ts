import type { V1Node } from '@kubernetes/client-node';
import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError } from '@temporalio/client';
import {
  keptNodeCondition,
  nodeMachineAnnotation,
  type NodeConditionState,
  type NodeHealth,
} from '../../src/contract/machine';
import { nodeHealthSignal } from '../../src/contract/machine-messages';
import { machineWorkflowId } from '../../src/contract/workflow-ids';
import { forEachBounded } from '../../src/util/bounded-parallel';
import { checkedName } from '../../src/util/checked-paths';
import { nodeWatch } from './node-watch';
import { workloadClient } from './workload-cluster';

/** How often the watch reports it is alive, and re-reads the Nodes at the latest. */
const passEveryMs = 5000;
const minPassGapMs = 1000;
/**
 * Signals in flight at once. One at a time, a pass over a 5,000-Node cluster whose Nodes flapped together outlasted
 * the activity's heartbeat timeout: every attempt died mid-pass and machines told Unknown were never told Ready.
 */
const tellsAtOnce = 16;
/** Each heartbeat encodes every Node told unhealthy: within a pass, one every few seconds is enough. */
const beatWithinPassMs = 3000;

/**
 * How often the machines' own record of their Node's health (CaptNodeHealthy) is read back. What `told` holds can
 * be behind what was told (heartbeats are throttled, an attempt that dies loses its last seconds of them, and a new
 * attempt starts empty): a machine told its Node was unhealthy that `told` forgot would never hear it recovered.
 * Likely how 77 machines of a 5,000-worker rollout were left NodeHealthy False beside Ready Nodes (run 6; run 7,
 * with this read, did not wait on any).
 */
const recordsReadEveryMs = 30_000;
/** `told` for a machine recorded unhealthy that this watch does not know it told: no real key, so its next pass tells it. */
const recordedUnhealthy = 'recorded unhealthy';

/** What the last attempt told machines, for the next attempt: only Nodes not healthy (absent = told healthy). */
interface Checkpoint {
  told: Record<string, string>;
}

/** The running machines of a cluster whose workflows record their Node as not healthy. */
async function machinesRecordedUnhealthy(ctx: Context, namespace: string, cluster: string): Promise<string[]> {
  const query =
    `CaptKind = "Machine" AND CaptNamespace = "${checkedName('namespace', namespace)}" AND ` +
    `CaptCluster = "${checkedName('cluster', cluster)}" AND CaptPhase = "Running" AND CaptNodeHealthy != "True" AND ` +
    'ExecutionStatus = "Running"';
  const prefix = machineWorkflowId(namespace, '');
  const names: string[] = [];
  for await (const wf of ctx.client.workflow.list({ query }))
    if (wf.workflowId.startsWith(prefix)) names.push(wf.workflowId.slice(prefix.length));
  return names;
}

/** A Node's health as its machine keeps it: Ready, and the conditions that are not healthy since they changed. */
export function nodeHealth(node: V1Node): NodeHealth {
  const conditions = node.status?.conditions ?? [];
  const ready = conditions.find((c) => c.type === 'Ready');
  const unhealthy: NodeConditionState[] = conditions.filter(keptNodeCondition).map((c) => ({
    type: c.type,
    status: c.status as NodeConditionState['status'],
    since: new Date(c.lastTransitionTime ?? 0).toISOString(),
    ...(c.reason ? { reason: c.reason } : {}),
    ...(c.message ? { message: c.message.slice(0, 200) } : {}),
  }));
  return {
    ready: (ready?.status as NodeHealth['ready'] | undefined) ?? 'Unknown',
    ...(ready?.message ? { message: ready.message.slice(0, 200) } : {}),
    conditions: unhealthy,
  };
}

/** Changes of what a machine is told, not of heartbeat times: statuses, reasons and transition times only. */
const keyOf = (h: NodeHealth) =>
  JSON.stringify([
    h.ready,
    h.gone ?? false,
    (h.conditions ?? []).map((c) => [c.type, c.status, c.reason ?? '', c.since]),
  ]);
const healthyKey = keyOf({ ready: 'True', conditions: [] });

/**
 * Keeps every machine of a cluster told of its Node's health: one watch of the cluster's Nodes, and a signal
 * to a machine only when its Node's health changes (never on a heartbeat). Runs for `runForSeconds`, then
 * returns so its workflow starts a fresh attempt; heartbeats carry what it told, so a new attempt (another
 * worker) tells only what changed meanwhile.
 */
export async function watchNodeHealth(target: {
  namespace: string;
  cluster: string;
  runForSeconds: number;
}): Promise<void> {
  const ctx = Context.current();
  const client = await workloadClient(target.namespace, target.cluster);
  const watch = nodeWatch(`${target.namespace}/${target.cluster}`, client);
  const release = watch.hold();
  const told: Record<string, string> = { ...((ctx.info.heartbeatDetails as Checkpoint | undefined)?.told ?? {}) };
  // Machines whose Node was seen this attempt: a Node gone from the list was deleted.
  const seen = new Map<string, string>();
  let lastBeat = 0;
  const beat = () => {
    lastBeat = Date.now();
    ctx.heartbeat({ told } satisfies Checkpoint);
  };
  const tell = async (machine: string, health: NodeHealth) => {
    const key = keyOf(health);
    if ((told[machine] ?? healthyKey) === key) return;
    try {
      await ctx.client.workflow
        .getHandle(machineWorkflowId(target.namespace, machine))
        .signal(nodeHealthSignal, health);
    } catch (err) {
      // The machine is gone already: nothing to tell.
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    }
    if (key === healthyKey) delete told[machine];
    else told[machine] = key;
    // Kept every few seconds within a pass too: a pass that outlasts an attempt leaves the next one only the rest.
    if (Date.now() - lastBeat >= beatWithinPassMs) beat();
  };
  let recordsRead = 0;
  const readRecords = async () => {
    recordsRead = Date.now();
    for (const machine of await machinesRecordedUnhealthy(ctx, target.namespace, target.cluster))
      told[machine] ??= recordedUnhealthy;
  };
  const deadline = Date.now() + target.runForSeconds * 1000;
  try {
    while (Date.now() < deadline) {
      if (watch.synced) {
        if (Date.now() - recordsRead >= recordsReadEveryMs) await readRecords();
        const now = new Map<string, { node: string; health: NodeHealth }>();
        for (const node of watch.nodes()) {
          const machine = node.metadata?.annotations?.[nodeMachineAnnotation];
          if (machine) now.set(machine, { node: node.metadata!.name!, health: nodeHealth(node) });
        }
        const gone = [...seen].filter(([machine]) => !now.has(machine));
        await forEachBounded([...now], tellsAtOnce, ([machine, { health }]) => tell(machine, health));
        await forEachBounded(gone, tellsAtOnce, ([machine, node]) =>
          tell(machine, { ready: 'Unknown', gone: true, message: `Node ${node} was deleted` }),
        );
        seen.clear();
        for (const [machine, { node }] of now) seen.set(machine, node);
      }
      beat();
      // Kubelets update their Nodes every few seconds each: one pass a second at most, whatever the count.
      const changed = watch.anyChange(passEveryMs);
      await ctx.sleep(minPassGapMs);
      await Promise.race([changed, ctx.sleep(passEveryMs - minPassGapMs)]);
    }
  } finally {
    release();
  }
}
