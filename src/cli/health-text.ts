import type { ClusterHealthOutcome } from '../client/capt-client';
import type { ClusterHealth, ProbeResult, ResourceAllocation } from '../contract/cluster-health';
import { age, table } from './render';

/** Problems named on a report's first line; the rest are counted there and listed below it. */
const headlineProblems = 3;

const bytes = (n: number) =>
  n >= 2 ** 30
    ? `${(n / 2 ** 30).toFixed(1)} GiB`
    : n >= 2 ** 20
      ? `${(n / 2 ** 20).toFixed(1)} MiB`
      : `${Math.round(n / 2 ** 10)} KiB`;
const amount = (a: ResourceAllocation, n: number) =>
  a.resource === 'memory' ? bytes(n) : a.resource === 'cpu' ? `${+n.toFixed(2)}` : String(n);
const allocationText = (a: ResourceAllocation) =>
  `${a.resource} ${amount(a, a.requested)}/${amount(a, a.allocatable)} (${a.percent}%)`;
const probeText = (p: ProbeResult, ok: string) => (p.ok ? ok : (p.detail ?? 'failed'));

/** The first line: healthy with what was seen, or unhealthy naming what is wrong. */
export function healthHeadline(h: ClusterHealth): string {
  const name = `cluster ${h.namespace}/${h.cluster}`;
  if (h.healthy) {
    return (
      `${name}: healthy (${h.nodes.ready}/${h.nodes.total} Nodes Ready, etcd ${h.etcd.members.length} member${h.etcd.members.length === 1 ? '' : 's'}` +
      ` led by ${h.etcd.leader}, ${h.controlPlane.length} control-plane machine${h.controlPlane.length === 1 ? '' : 's'} healthy)`
    );
  }
  const count = h.problems.length + h.problemsOmitted;
  const more = count > headlineProblems ? ` (and ${count - headlineProblems} more)` : '';
  return `${name}: unhealthy: ${h.problems
    .slice(0, headlineProblems)
    .map((p) => p.message)
    .join('; ')}${more}`;
}

function etcdSection(h: ClusterHealth): string[] {
  const { etcd } = h;
  const match = etcd.membersMatchMachines
    ? 'members = control-plane machines'
    : 'members are NOT the control-plane machines';
  return [
    `etcd: ${etcd.error ?? `${etcd.leader ? `leader ${etcd.leader}` : 'no leader'}; ${match} [${etcd.machines.join(', ')}]`}`,
    table(
      ['MEMBER', 'ID', 'HEALTH', 'LEADER', 'DB SIZE (IN USE)'],
      etcd.members.map((m) => [
        m.name,
        m.id ? BigInt(m.id).toString(16) : '',
        m.healthy ? 'healthy' : `unhealthy: ${m.detail}`,
        m.leader ? 'yes' : '',
        m.dbSizeBytes === undefined ? '' : `${bytes(m.dbSizeBytes)} (${bytes(m.dbSizeInUseBytes ?? 0)})`,
      ]),
    ),
  ];
}

function controlPlaneSection(h: ClusterHealth): string[] {
  return [
    `kube-apiserver through the endpoint ${h.endpoint.address}: ${probeText(h.endpoint.readyz, 'ready')}`,
    table(
      ['MACHINE', 'ADDRESS', 'KUBE-APISERVER', 'KUBE-CONTROLLER-MANAGER', 'KUBE-SCHEDULER'],
      h.controlPlane.map((m) => [
        m.machine,
        m.address ?? '',
        probeText(m.apiserver, 'ready'),
        probeText(m.controllerManager, 'healthy'),
        probeText(m.scheduler, 'healthy'),
      ]),
    ),
  ];
}

function machinesSection(h: ClusterHealth): string[] {
  return [
    'machines (with a Node / asked for):',
    table(
      ['OWNER', 'NODES', 'WITHOUT A NODE PAST STARTUP TIMEOUT', 'REMEDIATING'],
      h.machinePools.map((p) => [
        p.kind === 'Machine' ? 'standalone Machines' : `${p.kind}/${p.name}`,
        p.error ? `unknown: ${p.error}` : `${p.withNode}/${p.replicas}`,
        p.pastStartup ? `${p.pastStartup} (${p.nodeStartupTimeoutSeconds}s)` : '',
        p.remediating.map((r) => `${r.machine} (${r.reason})`).join(', '),
      ]),
    ),
  ];
}

function nodesSection(h: ClusterHealth): string[] {
  const { nodes } = h;
  if (nodes.error) return [`nodes: could not be listed: ${nodes.error}`];
  const rows = nodes.unhealthy.flatMap((n) =>
    n.conditions.map((c, i) => [
      i === 0 ? n.name : '',
      c.type,
      c.status,
      c.reason ?? '',
      age(c.since),
      c.message ?? '',
    ]),
  );
  return [
    `nodes: ${nodes.ready}/${nodes.total} Ready${nodes.unhealthy.length ? `; not Ready or under pressure: ${nodes.unhealthy.length + nodes.unhealthyOmitted}` : ''}`,
    ...(rows.length ? [table(['NODE', 'CONDITION', 'STATUS', 'REASON', 'SINCE', 'MESSAGE'], rows)] : []),
    ...(nodes.unhealthyOmitted ? [`(and ${nodes.unhealthyOmitted} more Nodes)`] : []),
    `allocated (requests/allocatable): ${nodes.allocated.map(allocationText).join(', ')}`,
    ...(nodes.mostAllocated.length
      ? [
          `most allocated: ${nodes.mostAllocated.map((n) => `${n.name} ${n.allocations.map((a) => `${a.resource} ${a.percent}%`).join(' ')}`).join('; ')}`,
        ]
      : []),
  ];
}

function systemPodsSection(h: ClusterHealth): string[] {
  const pods = h.systemPods;
  if (pods.error) return [`kube-system pods: could not be listed: ${pods.error}`];
  const rows = pods.problems.flatMap((p) => [
    [p.name, p.phase, p.node ?? '', p.reason ?? ''],
    ...p.events.map((e) => [
      '',
      '',
      '',
      `${age(e.last)} ago ${e.type} ${e.reason}${e.count > 1 ? ` (x${e.count})` : ''}: ${e.message}`,
    ]),
  ]);
  return [
    `kube-system pods: ${pods.problems.length + pods.problemsOmitted} of ${pods.total} neither Running nor Completed`,
    ...(rows.length ? [table(['POD', 'PHASE', 'NODE', 'REASON / LAST EVENTS'], rows)] : []),
    ...(pods.problemsOmitted ? [`(and ${pods.problemsOmitted} more pods)`] : []),
  ];
}

/** `capt health cluster NAME`: the headline, every problem, then each part's detail. */
export function healthText(h: ClusterHealth): string {
  const problems = h.healthy
    ? []
    : [
        '',
        'problems:',
        ...h.problems.map((p) => `  - ${p.message}`),
        ...(h.problemsOmitted ? [`  (and ${h.problemsOmitted} more)`] : []),
      ];
  return [
    healthHeadline(h),
    ...problems,
    '',
    ...etcdSection(h),
    '',
    ...controlPlaneSection(h),
    '',
    ...machinesSection(h),
    '',
    ...nodesSection(h),
    '',
    ...systemPodsSection(h),
  ].join('\n');
}

/** `capt health clusters`: one line per cluster, its first problem named. */
export function healthTable(outcomes: ClusterHealthOutcome[]): string {
  return table(
    ['NAMESPACE', 'NAME', 'HEALTH', 'NODES READY', 'PROBLEMS'],
    outcomes.map(({ namespace, name, health, error }) => {
      if (!health) return [namespace, name, 'Unknown', '', `check failed: ${error}`];
      const count = health.problems.length + health.problemsOmitted;
      return [
        namespace,
        name,
        health.healthy ? 'Healthy' : 'Unhealthy',
        health.nodes.error ? '?' : `${health.nodes.ready}/${health.nodes.total}`,
        count === 0 ? '' : `${health.problems[0]!.message}${count > 1 ? ` (and ${count - 1} more)` : ''}`,
      ];
    }),
  );
}
