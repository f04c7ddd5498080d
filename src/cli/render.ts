import { stringify } from 'yaml';
import type { ClusterStatus } from '../../workflows/cluster/cluster-status';
import type { Condition, MachineStatus } from '../../workflows/machine/machine-model';
import type { OwnerStatus } from '../../workflows/shared/owner-status';

/** Plain-text rendering for the CLI: tables as kubectl prints them, and clusterctl's describe tree. */
export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  return [headers, ...rows].map((r) => r.map((c, i) => (c ?? '').padEnd(widths[i]!)).join('   ').trimEnd()).join('\n');
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

export function clustersTable(clusters: ClusterStatus[], wide: boolean): string {
  const headers = ['NAMESPACE', 'NAME', 'PHASE', 'VERSION', 'PROVIDER', 'CONTROL PLANE', 'WORKERS', 'AGE', ...(wide ? ['ENDPOINT', 'STEP'] : [])];
  return table(headers, clusters.map((c) => {
    const workers = c.machineDeployments.reduce((a, m) => [a[0]! + m.readyReplicas, a[1]! + m.replicas], [0, 0]);
    return [c.namespace, c.name, c.phase, c.version, c.provider, `${c.controlPlane?.readyReplicas ?? 0}/${c.controlPlane?.replicas ?? 0}`, `${workers[0]}/${workers[1]}`, age(c.createdAt), ...(wide ? [c.endpoint, c.step] : [])];
  }));
}

export function machinesTable(machines: MachineStatus[], wide: boolean): string {
  const headers = ['NAMESPACE', 'NAME', 'CLUSTER', 'NODENAME', 'PROVIDERID', 'PHASE', 'AGE', 'VERSION', ...(wide ? ['ADDRESS', 'STEP'] : [])];
  return table(headers, machines.map((m) => [m.namespace, m.name, m.cluster, m.nodeRef ?? '', m.providerID ?? '', m.phase, age(m.createdAt), m.version, ...(wide ? [m.addresses.join(','), m.step] : [])]));
}

export function ownersTable(owners: OwnerStatus[]): string {
  return table(['NAMESPACE', 'NAME', 'KIND', 'REPLICAS', 'READY', 'UPDATED', 'AVAILABLE', 'REVISION', 'VERSION', 'STEP'], owners.map((o) => [
    o.namespace, o.name, o.kind, String(o.replicas), String(o.readyReplicas), String(o.updatedReplicas), String(o.availableReplicas), `${o.revision}${o.paused ? ' (paused)' : ''}`, o.version, o.step,
  ]));
}

function ready(conditions: Condition[]): Condition {
  return conditions.find((c) => c.type === 'Ready' || c.type === 'Available') ?? { type: 'Ready', status: 'Unknown' };
}

/** clusterctl describe's tree: Cluster -> control plane -> MachineDeployments -> Machines, with READY/REASON/SINCE/MESSAGE. */
export function describeTree(c: ClusterStatus, allConditions: boolean): string {
  const rows: string[][] = [];
  const add = (prefix: string, name: string, conditions: Condition[], since?: string, step?: string) => {
    const r = ready(conditions);
    rows.push([`${prefix}${name}`, r.status, r.reason ?? '', age(r.lastTransitionTime ?? since), r.message ?? step ?? '']);
    if (allConditions) for (const cond of conditions.filter((x) => x !== r)) rows.push([`${prefix.replace(/[├└]─ $/, '│  ')}  ${cond.type}`, cond.status, cond.reason ?? '', age(cond.lastTransitionTime), cond.message ?? '']);
  };
  add('', `Cluster/${c.name}`, c.conditions, c.createdAt, c.step);
  const children = [...(c.controlPlane ? [c.controlPlane] : []), ...c.machineDeployments];
  children.forEach((o, i) => {
    const last = i === children.length - 1;
    add(last ? '└─ ' : '├─ ', `${o.kind}/${o.name} (${o.readyReplicas}/${o.replicas}, ${o.version})`, o.conditions, undefined, o.step);
    o.machines.forEach((m, j) => {
      add(`${last ? '   ' : '│  '}${j === o.machines.length - 1 ? '└─ ' : '├─ '}`, `Machine/${m.name} (${m.phase})`, m.conditions, m.createdAt, m.step);
    });
  });
  const inProgress = [c, ...children, ...children.flatMap((o) => o.machines)].filter((x) => 'step' in x && x.step && !/running|reconciled|deleted/.test(x.step));
  const footer = inProgress.length ? `\nIn progress:\n${inProgress.map((x) => `  ${'kind' in x ? `${x.kind}/${x.name}` : 'phase' in x && 'nodeRef' in x ? `Machine/${(x as MachineStatus).name}` : `Cluster/${c.name}`}: ${x.step}`).join('\n')}` : '';
  return table(['NAME', 'READY', 'REASON', 'SINCE', 'MESSAGE'], rows) + footer;
}
