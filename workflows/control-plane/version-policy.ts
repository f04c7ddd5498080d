import { ApplicationFailure } from '@temporalio/workflow';

const parse = (v: string) => v.replace(/^v/, '').split('.').map(Number) as [number, number, number];

/** Kubernetes' upgrade rule, as KubeadmControlPlane enforces it: no downgrades, at most one minor step. */
export function validateVersionChange(from: string, to: string): void {
  const [a, b] = [parse(from), parse(to)];
  const refuse = (why: string) => {
    throw ApplicationFailure.create({ message: `cannot update Kubernetes version from ${from} to ${to}: ${why}`, type: 'UnsupportedVersion', nonRetryable: true });
  };
  if (a[0] !== b[0]) refuse('the major version cannot change');
  if (b[1] < a[1] || (b[1] === a[1] && b[2] < a[2])) refuse('downgrades are not supported');
  if (b[1] - a[1] > 1) refuse(`upgrade one minor version at a time (next: v${a[0]}.${a[1] + 1}.x)`);
}
