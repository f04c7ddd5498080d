import { parseVersion, upgradePlan } from '../contract/upgrade-plan';
import { problem, type SpecProblem, type SpecSubject } from './spec-problem';

// Versions reach these rules checked (vX.Y.Z) by the kinds' schemas.
const parse = (v: string) => parseVersion(v)!;

/** `a` is a later minor (or major) version than `b`: kubelets at `a` may not talk to an apiserver at `b`. */
export function newerMinor(a: string, b: string): boolean {
  const [x, y] = [parse(a), parse(b)];
  return x[0] > y[0] || (x[0] === y[0] && x[1] > y[1]);
}

/**
 * Kubernetes' upgrade rule, as KubeadmControlPlane enforces it: at most one minor step, and no downgrade,
 * except that a rollout undo may step back one minor version.
 */
export function versionChangeProblems(
  subject: SpecSubject,
  path: string,
  from: string,
  to: string,
  opts: { undo?: boolean } = {},
): SpecProblem[] {
  const [a, b] = [parse(from), parse(to)];
  const refuse = (why: string, hint: string) => [
    problem(
      subject,
      path,
      `cannot update Kubernetes version from ${from} to ${to}: ${why}`,
      hint,
      'UnsupportedVersion',
    ),
  ];
  if (a[0] !== b[0])
    return refuse('the major version cannot change', `stay on v${a[0]}.x; a new major version needs a new cluster`);
  const downgrade = b[1] < a[1] || (b[1] === a[1] && b[2] < a[2]);
  if (downgrade && !opts.undo)
    return refuse('downgrades are not supported', '`capt rollout undo` returns to an earlier revision');
  if (Math.abs(b[1] - a[1]) > 1)
    return refuse('change one minor version at a time', `go to v${a[0]}.${a[1] + (b[1] > a[1] ? 1 : -1)}.x first`);
  return [];
}

/**
 * A ClusterClass-based cluster's version change, as Cluster API's Cluster webhook judges it: no downgrade, and at
 * most the next minor unless the class lists spec.kubernetesVersions, through which the change is a chained upgrade.
 * One whose workers would have to stop on the way (more than three minors ahead of them) is refused.
 */
export function topologyVersionChangeProblems(
  subject: SpecSubject,
  from: string,
  to: string,
  classVersions: readonly string[] | undefined,
  oldestWorkers: string | undefined,
): SpecProblem[] {
  const [a, b] = [parse(from), parse(to)];
  // Cluster API's messages quote the versions without their "v".
  const quoted = `from "${from.slice(1)}" to "${to.slice(1)}"`;
  const refuse = (message: string, hint: string) => [
    problem(subject, 'spec.topology.version', message, hint, 'UnsupportedVersion'),
  ];
  if (a[0] !== b[0])
    return refuse(
      `cannot update Kubernetes version from ${from} to ${to}: the major version cannot change`,
      `stay on v${a[0]}.x; a new major version needs a new cluster`,
    );
  if (b[1] < a[1] || (b[1] === a[1] && b[2] < a[2]))
    return refuse(`version cannot be decreased ${quoted}`, `keep ${from} or a later version`);
  const plan = upgradePlan(classVersions, to, from, oldestWorkers);
  if (!('refused' in plan)) {
    if (plan.workers.length < 2) return [];
    // Kubelets may be three minors older than the apiserver: further, Cluster API stops the workers on the way.
    return refuse(
      `the workers (${oldestWorkers}) would have to upgrade on the way, to ${plan.workers.slice(0, -1).join(', ')}: capt's chained upgrades upgrade the workers once, at the end`,
      `upgrade to ${plan.workers[0]} first, then to ${to}`,
    );
  }
  return classVersions?.length
    ? refuse(plan.refused, `pick a version the ClusterClass lists in spec.kubernetesVersions`)
    : refuse(
        `version cannot be increased ${quoted}`,
        `go to v${a[0]}.${a[1] + 1}.x first, or list every minor up to ${to} in the ClusterClass's spec.kubernetesVersions: the cluster then steps through them (a chained upgrade)`,
      );
}

/**
 * While a chained upgrade still has control-plane steps to give, its target stays: Cluster API refuses a version
 * change while the control plane completes a previous upgrade, and so does capt (`stepsLeft`: those steps).
 */
export function upgradeUnderWayProblems(
  subject: SpecSubject,
  target: string,
  next: string,
  stepsLeft: readonly string[],
): SpecProblem[] {
  if (!stepsLeft.length || next === target) return [];
  return [
    problem(
      subject,
      'spec.topology.version',
      `version cannot be changed: control plane is still completing a previous upgrade (to ${target}; steps left ${stepsLeft.join(', ')})`,
      `wait until the control plane runs ${target} (capt describe cluster shows the plan), then change it`,
      'UnsupportedVersion',
    ),
  ];
}
