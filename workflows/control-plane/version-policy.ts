import { ApplicationFailure } from '@temporalio/workflow';

const parse = (v: string) => v.replace(/^v/, '').split('.').map(Number) as [number, number, number];

/**
 * Kubernetes' upgrade rule, as KubeadmControlPlane enforces it: at most one minor step, and no downgrade,
 * except that a rollout undo may step back one minor version.
 */
export function validateVersionChange(from: string, to: string, opts: { undo?: boolean } = {}): void {
  const [a, b] = [parse(from), parse(to)];
  const refuse = (why: string) => {
    throw ApplicationFailure.create({ message: `cannot update Kubernetes version from ${from} to ${to}: ${why}`, type: 'UnsupportedVersion', nonRetryable: true });
  };
  if (a[0] !== b[0]) refuse('the major version cannot change');
  const downgrade = b[1] < a[1] || (b[1] === a[1] && b[2] < a[2]);
  if (downgrade && !opts.undo) refuse('downgrades are not supported; `capt rollout undo` returns to an earlier revision');
  if (Math.abs(b[1] - a[1]) > 1) refuse(`change one minor version at a time (next: v${a[0]}.${a[1] + (b[1] > a[1] ? 1 : -1)}.x)`);
}
