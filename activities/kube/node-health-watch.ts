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
/**
 * How long a Node stays missing before its machine is told it is gone. A machine being deleted deletes its own Node
 * and closes a moment later: told at once, most got a signal they did not need, and some a failed last workflow
 * task (the signal arrived while it ran). By then they are closed, and the tell finds no workflow.
 */
const goneAfterMs = 15_000;

/**
 * What the last attempt left, for the next attempt: what it told machines, only Nodes not healthy (absent = told
 * healthy), and the Nodes found missing but not yet told gone (machine: [Node, missing since, epoch ms]).
 */
interface Checkpoint {
  told: Record<string, string>;
  missing?: Record<string, [string, number]>;
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
  const last = ctx.info.heartbeatDetails as Checkpoint | undefined;
  const told: Record<string, string> = { ...(last?.told ?? {}) };
  // Machines whose Node was seen this attempt: a Node gone from the list was deleted.
  const seen = new Map<string, string>();
  const missing = new Map(Object.entries(last?.missing ?? {}));
  let lastBeat = 0;
  const beat = () => {
    lastBeat = Date.now();
    ctx.heartbeat({ told, missing: Object.fromEntries(missing) } satisfies Checkpoint);
  };
  const tell = async (machine: string, health: NodeHealth) => {
    const key = keyOf(health);
    if ((told[machine] ?? healthyKey) === key) return;
    try {
      await ctx.client.workflow
        .getHandle(machineWorkflowId(target.namespace, machine))
        .signal(nodeHealthSignal, health);
    } catch (err) {
      // The machine is gone already: nothing to tell, or to remember.
      if (!(err instanceof WorkflowNotFoundError)) throw err;
      delete told[machine];
      return;
    }
    if (key === healthyKey) delete told[machine];
    else told[machine] = key;
    // Kept every few seconds within a pass too: a pass that outlasts an attempt leaves the next one only the rest.
    if (Date.now() - lastBeat >= beatWithinPassMs) beat();
  };
  let recordsRead = 0;
  /** Reads the records back; forgets machines neither seen, missing nor recorded (deleted since), so `told` stays bounded. */
  const readRecords = async (now: Map<string, unknown>) => {
    recordsRead = Date.now();
    const recorded = new Set(await machinesRecordedUnhealthy(ctx, target.namespace, target.cluster));
    for (const machine of Object.keys(told))
      if (!recorded.has(machine) && !now.has(machine) && !missing.has(machine)) delete told[machine];
    for (const machine of recorded) told[machine] ??= recordedUnhealthy;
  };
  const deadline = Date.now() + target.runForSeconds * 1000;
  try {
    while (Date.now() < deadline) {
      if (watch.synced) {
        const now = new Map<string, { node: string; health: NodeHealth }>();
        for (const node of watch.nodes()) {
          const machine = node.metadata?.annotations?.[nodeMachineAnnotation];
          if (machine) now.set(machine, { node: node.metadata!.name!, health: nodeHealth(node) });
        }
        if (Date.now() - recordsRead >= recordsReadEveryMs) await readRecords(now);
        const passAt = Date.now();
        for (const [machine, node] of seen)
          if (!now.has(machine) && !missing.has(machine)) missing.set(machine, [node, passAt]);
        for (const machine of now.keys()) missing.delete(machine);
        const gone = [...missing].filter(([, [, since]]) => passAt - since >= goneAfterMs);
        await forEachBounded([...now], tellsAtOnce, ([machine, { health }]) => tell(machine, health));
        await forEachBounded(gone, tellsAtOnce, async ([machine, [node]]) => {
          await tell(machine, { ready: 'Unknown', gone: true, message: `Node ${node} was deleted` });
          missing.delete(machine);
        });
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
