import type { OwnerStatus } from '../contract/owner';
import type { RepairReport } from '../contract/owner-recovery';
import { table } from './render';

/** `capt repair cluster`: each owner's workflow as found, what was done, and what the rebuilt ones adopted. */
export function repairText(report: RepairReport, adopted: OwnerStatus[]): string {
  const rows = report.owners.map((o) => [`${o.kind}/${o.name}`, o.workflowId, o.state, String(o.machines), o.action]);
  const lines = [
    table(['OWNER', 'WORKFLOW', 'STATE', 'MACHINES', 'ACTION'], rows),
    `standalone machines (owned by the cluster): ${report.standaloneMachines}`,
    `machines the provider holds: ${report.providerMachines}${providerSurplus(report) ? ` (${providerSurplus(report)} more than machine workflows account for: their own workflows were lost)` : ''}`,
    ...adopted.map(
      (s) =>
        `${s.kind}/${s.name}: rebuilt, adopted ${s.adoption?.adopted ?? 0} machines; ${s.readyReplicas}/${s.replicas} running`,
    ),
  ];
  const lost = report.owners.filter((o) => o.action !== 'none').length;
  if (!lost)
    lines.push(`cluster ${report.namespace}/${report.cluster}: every owner workflow is running; nothing to repair`);
  else if (report.dryRun)
    lines.push(`dry run: ${lost} lost owner(s) would be rebuilt; run without --dry-run to rebuild them`);
  return lines.join('\n');
}

/** Provider machines no machine workflow accounts for. */
const providerSurplus = (report: RepairReport) =>
  Math.max(0, report.providerMachines - report.owners.reduce((n, o) => n + o.machines, report.standaloneMachines));
