import type { V1Node, V1Pod } from '@kubernetes/client-node';
import {
  clipMessage,
  healthListLimit,
  type NodeAllocation,
  type NodesHealth,
  type ResourceAllocation,
  type UnhealthyNode,
} from '../../src/contract/cluster-health';
import { parseQuantity } from '../../src/kube/quantity';
import { healthyNodeConditionStates, type NodeConditionState } from '../../src/contract/machine';

/** Nodes listed by name among the most allocated. */
const mostAllocatedListed = 5;
const resources = ['cpu', 'memory', 'pods'] as const;
type Amounts = Record<(typeof resources)[number], number>;

const condition = (node: V1Node, type: string) => node.status?.conditions?.find((c) => c.type === type);

/** Every condition in its healthy state: the known ones' (Ready True, pressure False), False for others (node-problem-detector's). */
export function nodeIsHealthy(node: V1Node): boolean {
  return (
    condition(node, 'Ready') !== undefined &&
    (node.status?.conditions ?? []).every((c) => c.status === (healthyNodeConditionStates[c.type] ?? 'False'))
  );
}

function conditionStates(node: V1Node): NodeConditionState[] {
  return (node.status?.conditions ?? []).map((c) => ({
    type: c.type,
    status: c.status as NodeConditionState['status'],
    reason: c.reason,
    message: c.message === undefined ? undefined : clipMessage(c.message),
    since: c.lastTransitionTime ? new Date(c.lastTransitionTime).toISOString() : '',
  }));
}

const quantity = (value: string | undefined) => (value === undefined ? 0 : parseQuantity(value) || 0);

/** What a pod asks of its Node, as the scheduler counts it: its containers' requests, or its largest init container's if that is more. */
function podRequests(pod: V1Pod): Amounts {
  const sum = (
    containers: { resources?: { requests?: Record<string, string> } }[] | undefined,
    resource: 'cpu' | 'memory',
  ) => (containers ?? []).map((c) => quantity(c.resources?.requests?.[resource]));
  const of = (resource: 'cpu' | 'memory') =>
    Math.max(
      sum(pod.spec?.containers, resource).reduce((a, b) => a + b, 0),
      ...sum(pod.spec?.initContainers, resource),
    ) + quantity(pod.spec?.overhead?.[resource]);
  return { cpu: of('cpu'), memory: of('memory'), pods: 1 };
}

function allocations(requested: Amounts, allocatable: Amounts): ResourceAllocation[] {
  return resources.map((resource) => ({
    resource,
    requested: requested[resource],
    allocatable: allocatable[resource],
    percent: allocatable[resource] > 0 ? Math.round((100 * requested[resource]) / allocatable[resource]) : 0,
  }));
}

const add = (a: Amounts, b: Amounts): Amounts => ({
  cpu: a.cpu + b.cpu,
  memory: a.memory + b.memory,
  pods: a.pods + b.pods,
});
const none = (): Amounts => ({ cpu: 0, memory: 0, pods: 0 });

/**
 * The Nodes' health from one list of Nodes and of the pods that still run (not Succeeded or Failed): which
 * are not Ready or under pressure, with all their conditions, and requests against allocatable resources,
 * per Node (the most allocated few) and for the whole cluster.
 */
export function nodesHealth(nodes: V1Node[], runningPods: V1Pod[]): NodesHealth {
  const requestedOn = new Map<string, Amounts>();
  for (const pod of runningPods) {
    const node = pod.spec?.nodeName;
    if (node) requestedOn.set(node, add(requestedOn.get(node) ?? none(), podRequests(pod)));
  }
  const perNode = nodes.map((n) => {
    const name = n.metadata!.name!;
    const a = n.status?.allocatable ?? {};
    return {
      name,
      requested: requestedOn.get(name) ?? none(),
      allocatable: { cpu: quantity(a.cpu), memory: quantity(a.memory), pods: quantity(a.pods) },
    };
  });
  const peak = (n: NodeAllocation) => Math.max(...n.allocations.map((a) => a.percent));
  const ranked: NodeAllocation[] = perNode
    .map((n) => ({ name: n.name, allocations: allocations(n.requested, n.allocatable) }))
    .filter((n) => peak(n) > 0)
    .sort((a, b) => peak(b) - peak(a) || a.name.localeCompare(b.name));
  const unhealthy: UnhealthyNode[] = nodes
    .filter((n) => !nodeIsHealthy(n))
    .map((n) => ({ name: n.metadata!.name!, conditions: conditionStates(n) }))
    .sort((a, b) => a.name.localeCompare(b.name));
  return {
    total: nodes.length,
    ready: nodes.filter((n) => condition(n, 'Ready')?.status === 'True').length,
    unhealthy: unhealthy.slice(0, healthListLimit),
    unhealthyOmitted: Math.max(0, unhealthy.length - healthListLimit),
    allocated: allocations(
      perNode.reduce((sum, n) => add(sum, n.requested), none()),
      perNode.reduce((sum, n) => add(sum, n.allocatable), none()),
    ),
    mostAllocated: ranked.slice(0, mostAllocatedListed),
  };
}
