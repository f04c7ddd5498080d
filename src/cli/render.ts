import { stringify } from 'yaml';
import { waitingToStart, type ClusterView } from '../contract/cluster';
import type { Condition, MachineStatus } from '../contract/machine';
import type { MachineRecord, OwnerStatus } from '../contract/owner';
import type { CertificateRow } from '../client/certificate-rows';
import { rolloutInWindowAnnotation } from '../contract/maintenance-window';

/** Plain-text rendering for the CLI: tables as kubectl prints them, and clusterctl's describe tree. */
export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  return [headers, ...rows]
    .map((r) =>
      r
        .map((c, i) => (c ?? '').padEnd(widths[i]!))
        .join('   ')
        .trimEnd(),
    )
    .join('\n');
}

export function age(since: string | undefined, now = Date.now()): string {
  if (!since) return '';
  const s = Math.max(0, Math.round((now - new Date(since).getTime()) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  if (s < 172800) return `${Math.round(s / 3600)}h`;
  return `${Math.round(s / 86400)}d`;
}

export function formatOutput(value: unknown, format: string): string {
  return format === 'yaml' ? stringify(value) : JSON.stringify(value, null, 2);
}

export function clustersTable(clusters: ClusterView[], wide: boolean): string {
  const headers = [
    'NAMESPACE',
    'NAME',
    'PHASE',
    'VERSION',
    'PROVIDER',
    'CONTROL PLANE',
    'WORKERS',
    'AGE',
    ...(wide ? ['ENDPOINT', 'STEP'] : []),
  ];
  return table(
    headers,
    clusters.map((c) => {
      const workers = c.machineDeployments.reduce((a, m) => [a[0]! + m.readyReplicas, a[1]! + m.replicas], [0, 0]);
      return [
        c.namespace,
        c.name,
        `${c.phase}${c.paused ? ' (paused)' : ''}`,
        c.version,
        c.provider,
        `${c.controlPlane?.readyReplicas ?? 0}/${c.controlPlane?.replicas ?? 0}`,
        `${workers[0]}/${workers[1]}`,
        age(c.createdAt),
        ...(wide ? [c.endpoint, c.step] : []),
      ];
    }),
  );
}

/** `capt get certificates`: soonest to expire first, as the client sorts them; RESIDUAL as kubeadm prints it. */
export function certificatesTable(rows: CertificateRow[], wide: boolean, now = Date.now()): string {
  const residual = (r: CertificateRow) =>
    r.notAfter === undefined
      ? ''
      : Date.parse(r.notAfter) <= now
        ? 'expired'
        : `${Math.floor((Date.parse(r.notAfter) - now) / 86_400_000)}d`;
  return table(
    ['NAMESPACE', 'CLUSTER', 'MACHINE', 'CERTIFICATE', 'EXPIRES', 'RESIDUAL', ...(wide ? ['SUBJECT'] : [])],
    rows.map((r) => [
      r.namespace,
      r.cluster,
      r.machine ?? '(cluster)',
      r.certificate,
      r.notAfter ?? r.problem ?? '',
      residual(r),
      ...(wide ? [r.subject ?? ''] : []),
    ]),
  );
}

export function machinesTable(machines: MachineStatus[], wide: boolean): string {
  const headers = [
    'NAMESPACE',
    'NAME',
    'CLUSTER',
    'NODENAME',
    'PROVIDERID',
    'PHASE',
    'NODEHEALTHY',
    'AGE',
    'VERSION',
    ...(wide ? ['FAILUREDOMAIN', 'ADDRESS', 'STEP'] : []),
  ];
  const nodeHealthy = (m: MachineStatus) => m.conditions.find((c) => c.type === 'NodeHealthy')?.status ?? 'Unknown';
  return table(
    headers,
    machines.map((m) => [
      m.namespace,
      m.name,
      m.cluster,
      m.nodeRef ?? '',
      m.providerID ?? '',
      m.phase,
      nodeHealthy(m),
      age(m.createdAt),
      m.version,
      ...(wide ? [m.failureDomain ?? '', m.addresses.join(','), m.step] : []),
    ]),
  );
}

export function ownersTable(owners: OwnerStatus[]): string {
  return table(
    ['NAMESPACE', 'NAME', 'KIND', 'REPLICAS', 'READY', 'UPDATED', 'AVAILABLE', 'REVISION', 'VERSION', 'STEP'],
    owners.map((o) => [
      o.namespace,
      o.name,
      o.kind,
      String(o.replicas),
      String(o.readyReplicas),
      String(o.updatedReplicas),
      String(o.availableReplicas),
      `${o.revision}${o.paused ? ' (paused)' : ''}`,
      o.version,
      o.step,
    ]),
  );
}

function ready(conditions: Condition[]): Condition {
  return conditions.find((c) => c.type === 'Ready' || c.type === 'Available') ?? { type: 'Ready', status: 'Unknown' };
}

/** An owner's machines shown one per row; with more than this, Running ones are grouped into one row, as clusterctl groups them. */
const machineRowLimit = 20;

/** The machines describe shows one by one: all of a small owner's, else those not Running (at most machineRowLimit). */
export function listedMachines(o: OwnerStatus): MachineRecord[] {
  if (o.machines.length <= machineRowLimit) return o.machines;
  return o.machines.filter((m) => m.phase !== 'Running' || m.deleting || m.node).slice(0, machineRowLimit);
}

/**
 * clusterctl describe's tree: Cluster -> control plane -> MachineDeployments -> Machines, with
 * READY/REASON/SINCE/MESSAGE. `details` are the listed machines' own statuses, read from their workflows.
 */
export function describeTree(c: ClusterView, allConditions: boolean, details: MachineStatus[] = []): string {
  const rows: string[][] = [];
  const add = (prefix: string, name: string, conditions: Condition[], since?: string, step?: string) => {
    const r = ready(conditions);
    rows.push([
      `${prefix}${name}`,
      r.status,
      r.reason ?? '',
      age(r.lastTransitionTime ?? since),
      r.message ?? step ?? '',
    ]);
    if (allConditions)
      for (const cond of conditions.filter((x) => x !== r))
        rows.push([
          `${prefix.replace(/[├└]─ $/, '│  ')}  ${cond.type}`,
          cond.status,
          cond.reason ?? '',
          age(cond.lastTransitionTime),
          cond.message ?? '',
        ]);
  };
  const detail = new Map(details.map((m) => [m.name, m]));
  const inProgress: string[] = [];
  const remediated: string[] = [];
  if (c.phase !== 'Provisioned' && c.phase !== 'Deleted') inProgress.push(`Cluster/${c.name}: ${c.step}`);
  // Applied changes an owner has not received yet (held for the control plane's upgrade) show before any step.
  for (const p of c.pending.filter(waitingToStart))
    inProgress.push(`${p.kind}/${p.name}: pending generation ${p.generation} (${p.reason}): ${p.message}`);
  if (c.upgradePlan)
    inProgress.push(
      `Cluster/${c.name}: upgrade plan: control plane ${c.upgradePlan.controlPlane.join(', ') || 'given its last version'}; workers ${c.upgradePlan.workers.join(', ') || 'none left'}`,
    );
  const about = [...(c.clusterClass ? [`ClusterClass ${c.clusterClass}`] : []), ...(c.paused ? ['paused'] : [])];
  add('', `Cluster/${c.name}${about.length ? ` (${about.join(', ')})` : ''}`, c.conditions, c.createdAt, c.step);
  const children = [...(c.controlPlane ? [c.controlPlane] : []), ...c.machineDeployments];
  children.forEach((o, i) => {
    const last = i === children.length - 1;
    add(
      last ? '└─ ' : '├─ ',
      `${o.kind}/${o.name} (${o.readyReplicas}/${o.replicas}, ${o.version})`,
      o.conditions,
      undefined,
      o.step,
    );
    if (!o.rolloutComplete || !o.ready) inProgress.push(`${o.kind}/${o.name}: ${o.step}`);
    const hc = o.healthCheck;
    if (hc) {
      rows.push([
        `${last ? '   ' : '│  '}MachineHealthCheck/${hc.name} (${hc.currentHealthy}/${hc.expectedMachines} healthy)`,
        hc.remediationAllowed ? 'True' : 'False',
        hc.remediationAllowed ? '' : 'TooManyUnhealthy',
        '',
        hc.message,
      ]);
      remediated.push(
        ...hc.remediations.map(
          (r) =>
            `${o.kind}/${o.name}: ${r.machine} at ${r.at}: ${r.reason}, ${r.message}, since ${r.since} (MachineHealthCheck ${hc.name})`,
        ),
      );
    }
    const listed = listedMachines(o);
    const grouped = o.machines.length - listed.length;
    const rowsOf = listed.length + (grouped ? 1 : 0);
    const branch = (j: number) => `${last ? '   ' : '│  '}${j === rowsOf - 1 ? '└─ ' : '├─ '}`;
    listed.forEach((m, j) => {
      const d = detail.get(m.name);
      const why =
        m.blocker ??
        (m.node
          ? m.node.conditions.map((x) => `${x.type}=${x.status} since ${x.since}`).join('; ') || 'Node deleted'
          : undefined);
      const conditions = d?.conditions ?? [
        {
          type: 'Ready',
          status: m.phase === 'Running' && !m.node ? 'True' : 'False',
          ...(why ? { message: why } : {}),
        },
      ];
      add(branch(j), `Machine/${m.name} (${m.phase})`, conditions, m.createdAt, d?.step ?? m.blocker);
      if (d && d.phase !== 'Running') inProgress.push(`Machine/${m.name}: ${d.step}`);
    });
    if (grouped) rows.push([`${branch(listed.length)}Machines: ${grouped} more, Running`, 'True', '', '', '']);
  });
  for (const m of c.machines) {
    add(
      '   ',
      `Machine/${m.name} (${m.phase}, standalone)`,
      [
        {
          type: 'Ready',
          status: m.phase === 'Running' && !m.node ? 'True' : 'False',
          ...(m.blocker ? { message: m.blocker } : {}),
        },
      ],
      m.createdAt,
    );
    if (m.phase !== 'Running') inProgress.push(`Machine/${m.name}: ${m.phase}${m.blocker ? ` (${m.blocker})` : ''}`);
  }
  const window = c.maintenanceWindow;
  const scheduled = [
    ...(window
      ? [
          `Cluster/${c.name}: maintenance window ${window.window}; ${window.held.length ? `held for it: ${window.held.join(', ')}` : `no owner is held for it (annotate them ${rolloutInWindowAnnotation}: "true")`}`,
        ]
      : []),
    ...children.flatMap((o) => [
      ...(o.repave
        ? [
            `${o.kind}/${o.name}: repave: machines older than ${o.repave.maxAgeSeconds}s are replaced${o.repave.nextDueAt ? `; the next is due at ${o.repave.nextDueAt}` : ''}`,
          ]
        : []),
      ...(o.maintenance ? [`${o.kind}/${o.name}: ${maintenanceText(o.maintenance)}`] : []),
    ]),
  ];
  const section = (title: string, lines: string[]) =>
    lines.length ? `\n${title}:\n${lines.map((x) => `  ${x}`).join('\n')}` : '';
  const rebuilt = (c.recoveries ?? []).map(
    (r) =>
      `${r.kind}/${r.name} at ${r.at}: ${r.cause}; ${r.adopted === undefined ? 'adopting its machines' : `adopted ${r.adopted} machines`}`,
  );
  // Sent by code newer than the workflow's (see docs/development.md, Changing workflow code): never dropped unseen.
  const unknown = [
    { ref: `Cluster/${c.name}`, s: c.unknownSignals },
    ...children.map((o) => ({ ref: `${o.kind}/${o.name}`, s: o.unknownSignals })),
    ...details.map((m) => ({ ref: `Machine/${m.name}`, s: m.unknownSignals })),
  ].flatMap(({ ref, s }) => (s ?? []).map((x) => `${ref}: ${x.name} (${x.count}x, last ${x.lastAt})`));
  return (
    table(['NAME', 'READY', 'REASON', 'SINCE', 'MESSAGE'], rows) +
    section('In progress', inProgress) +
    section('Scheduled', scheduled) +
    section('Remediated', remediated) +
    section('Rebuilt (workflow lost)', rebuilt) +
    section('Signals without a handler (ignored)', unknown)
  );
}

/** A held deployment's maintenance window: open until when, or when it opens next. */
function maintenanceText(m: NonNullable<OwnerStatus['maintenance']>): string {
  const when =
    m.open === undefined
      ? 'nothing waits for it'
      : m.open
        ? `open until ${m.closesAt}`
        : `closed; opens at ${m.opensAt}, until ${m.closesAt}`;
  return `replaces machines only in the maintenance window ${m.window}: ${when}`;
}
