import { problem, type SpecProblem, type SpecSubject } from './spec-problem';

const parse = (v: string) => v.replace(/^v/, '').split('.').map(Number) as [number, number, number];

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
