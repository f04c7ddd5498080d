import type { BuildWorkflows, UpgradeReport, WorkerBuilds } from '../client/worker-upgrade';
import { table } from './render';

const kinds = (b: BuildWorkflows) =>
  Object.entries(b.byKind)
    .map(([k, n]) => `${n} ${k}`)
    .join(', ');

/** `capt worker status`: one row per build, with its routing, drainage and open workflows. */
export function workerBuildsText(report: WorkerBuilds): string {
  if (!report.builds.length) return 'no versioned capt worker has polled this namespace yet: start `capt worker`';
  const routing = (b: BuildWorkflows) =>
    b.buildId === report.current
      ? 'current'
      : b.buildId === report.ramping?.buildId
        ? `ramping ${report.ramping.percentage}%`
        : '';
  const rows = report.builds.map((b) => [
    b.buildId,
    routing(b),
    b.status,
    b.drainage ?? '',
    String(b.running),
    kinds(b),
  ]);
  return table(['BUILD', 'ROUTING', 'STATUS', 'DRAINAGE', 'RUNNING', 'WORKFLOWS'], rows);
}

/** `capt upgrade workers`: what changed, and whether the previous build's workers may stop. */
export function upgradeText(r: UpgradeReport): string {
  const what =
    r.rampPercentage === undefined
      ? 'is the current build'
      : `is ramping: ${r.rampPercentage}% of new workflows (by workflow ID) start on it`;
  const lines = [`build ${r.buildId} ${what}${r.previous ? ` (before: ${r.previous})` : ''}`];
  if (!r.previous) return lines.join('\n');
  lines.push(
    `${r.wokenOwners} owner workflow(s) of ${r.previous} told: they continue as new onto their target build at once (Temporal 1.30.2 or newer)`,
  );
  const still = r.stillOnPrevious;
  if (!still?.running) lines.push(`nothing runs on ${r.previous} any more: its workers may stop`);
  else {
    lines.push(
      `${still.running} workflow(s) still run on ${r.previous} (${kinds(still)}; e.g. ${still.some.join(', ')}): keep its workers until none do (capt worker status)`,
    );
  }
  return lines.join('\n');
}
