import {
  ClusterHealthPart,
  type ClusterHealth,
  type EtcdHealth,
  type HealthProblem,
  type MachineComponentsHealth,
  type MachinePoolHealth,
  type NodesHealth,
  type ProbeResult,
  type SystemPodsHealth,
  type UnhealthyNode,
} from '../../src/contract/cluster-health';

/** Problems a report lists; the rest are counted (each list behind them is capped already, so this is rarely reached). */
const problemsListed = 50;

type HealthParts = Pick<ClusterHealth, 'endpoint' | 'controlPlane' | 'etcd' | 'machinePools' | 'nodes' | 'systemPods'>;

function etcdProblems(etcd: EtcdHealth): HealthProblem[] {
  const problems: HealthProblem[] = etcd.members
    .filter((m) => !m.healthy)
    .map((m) => ({
      part: ClusterHealthPart.Etcd,
      subject: m.name,
      message: `etcd member ${m.name} is unhealthy: ${m.detail}`,
    }));
  if (etcd.error) return problems.length ? problems : [{ part: ClusterHealthPart.Etcd, message: etcd.error }];
  if (!etcd.leader) problems.push({ part: ClusterHealthPart.Etcd, message: 'etcd has no leader' });
  if (!etcd.membersMatchMachines) {
    const names = etcd.members.map((m) => m.name);
    // A difference of one is that one's problem: a member left behind, or a machine that never joined.
    const odd = [
      ...names.filter((n) => !etcd.machines.includes(n)),
      ...etcd.machines.filter((n) => !names.includes(n)),
    ];
    problems.push({
      part: ClusterHealthPart.Etcd,
      ...(odd.length === 1 ? { subject: odd[0] } : {}),
      message: `etcd members [${names.sort().join(', ')}] are not the control-plane machines [${etcd.machines.join(', ')}]`,
    });
  }
  return problems;
}

function componentProblems(endpoint: HealthParts['endpoint'], machines: MachineComponentsHealth[]): HealthProblem[] {
  const failed = (part: ClusterHealthPart, result: ProbeResult, subject: string, where: string): HealthProblem[] =>
    result.ok ? [] : [{ part, subject, message: `${part} ${where}: ${result.detail}` }];
  return [
    ...failed(
      ClusterHealthPart.Apiserver,
      endpoint.readyz,
      endpoint.address,
      `/readyz through the endpoint ${endpoint.address}`,
    ),
    ...machines.flatMap((m) => failed(ClusterHealthPart.Apiserver, m.apiserver, m.machine, `on ${m.machine}`)),
    ...machines.flatMap((m) =>
      failed(ClusterHealthPart.ControllerManager, m.controllerManager, m.machine, `on ${m.machine}`),
    ),
    ...machines.flatMap((m) => failed(ClusterHealthPart.Scheduler, m.scheduler, m.machine, `on ${m.machine}`)),
  ];
}

/** Names listed in one problem's message; the rest are counted. */
const namesListed = 3;
const listed = (names: string[], total = names.length) =>
  `${names.slice(0, namesListed).join(', ')}${total > namesListed ? ` and ${total - namesListed} more` : ''}`;

const poolName = (p: MachinePoolHealth) => (p.kind === 'Machine' ? 'standalone Machines' : `${p.kind} ${p.name}`);

/**
 * Each owner's machines against what capt asked for, problem by problem across the owners (so the first
 * line names every short pool before any detail): status unread, short of Nodes, machines without a Node
 * past their startup timeout, remediations under way.
 */
function machinePoolProblems(pools: MachinePoolHealth[]): HealthProblem[] {
  const problem = (p: MachinePoolHealth, message: string) => ({
    part: ClusterHealthPart.Machines,
    subject: p.name,
    message,
  });
  const read = pools.filter((p) => !p.error);
  return [
    ...pools
      .filter((p) => p.error)
      .map((p) => problem(p, `${poolName(p)}: its machines could not be read: ${p.error}`)),
    ...read
      .filter((p) => p.withNode < p.replicas)
      .map((p) =>
        problem(p, `${poolName(p)} ${p.kind === 'Machine' ? 'have' : 'has'} ${p.withNode}/${p.replicas} Nodes`),
      ),
    ...read
      .filter((p) => p.pastStartup > 0)
      .map((p) =>
        problem(
          p,
          `${poolName(p)}: ${p.pastStartup} machine${p.pastStartup === 1 ? '' : 's'} without a Node past their startup timeout (${p.nodeStartupTimeoutSeconds}s): ${listed(p.pastStartupMachines, p.pastStartup)}`,
        ),
      ),
    ...read
      .filter((p) => p.remediating.length > 0)
      .map((p) =>
        problem(
          p,
          `${poolName(p)} ${p.kind === 'Machine' ? 'are' : 'is'} remediating ${listed(p.remediating.map((r) => `${r.machine} (${r.reason})`))}`,
        ),
      ),
  ];
}

/** `node X is NotReady: Ready Unknown (NodeStatusUnknown: …)`, or the condition that holds when it is Ready. */
function nodeProblem(node: UnhealthyNode): string {
  const ready = node.conditions.find((c) => c.type === 'Ready');
  const bad =
    ready && ready.status !== 'True' ? ready : node.conditions.find((c) => c.type !== 'Ready' && c.status === 'True');
  if (!bad) return `node ${node.name} reports no Ready condition`;
  const why = bad.reason ? ` (${bad.reason}${bad.message ? `: ${bad.message}` : ''})` : '';
  return bad === ready
    ? `node ${node.name} is NotReady: Ready ${bad.status}${why}`
    : `node ${node.name} has ${bad.type}${why}`;
}

function nodeProblems(nodes: NodesHealth): HealthProblem[] {
  if (nodes.error) return [{ part: ClusterHealthPart.Nodes, message: `Nodes could not be listed: ${nodes.error}` }];
  return [
    ...nodes.unhealthy.map((n) => ({ part: ClusterHealthPart.Nodes, subject: n.name, message: nodeProblem(n) })),
    ...(nodes.unhealthyOmitted
      ? [
          {
            part: ClusterHealthPart.Nodes,
            message: `and ${nodes.unhealthyOmitted} more Nodes not Ready or under pressure`,
          },
        ]
      : []),
  ];
}

function systemPodProblems(pods: SystemPodsHealth): HealthProblem[] {
  if (pods.error)
    return [{ part: ClusterHealthPart.SystemPods, message: `kube-system pods could not be listed: ${pods.error}` }];
  return [
    ...pods.problems.map((p) => ({
      part: ClusterHealthPart.SystemPods,
      subject: p.name,
      message: `kube-system pod ${p.name} is ${p.phase}${p.reason ? `: ${p.reason}` : ''}`,
    })),
    ...(pods.problemsOmitted
      ? [
          {
            part: ClusterHealthPart.SystemPods,
            message: `and ${pods.problemsOmitted} more kube-system pods not Running or Completed`,
          },
        ]
      : []),
  ];
}

/**
 * Everything wrong in a report, most fundamental first: etcd, then the apiservers and components, the
 * machines asked for without their Nodes, the Nodes, system pods.
 */
export function healthProblems(parts: HealthParts): { problems: HealthProblem[]; problemsOmitted: number } {
  const all = [
    ...etcdProblems(parts.etcd),
    ...componentProblems(parts.endpoint, parts.controlPlane),
    ...machinePoolProblems(parts.machinePools),
    ...nodeProblems(parts.nodes),
    ...systemPodProblems(parts.systemPods),
  ];
  return { problems: all.slice(0, problemsListed), problemsOmitted: Math.max(0, all.length - problemsListed) };
}
