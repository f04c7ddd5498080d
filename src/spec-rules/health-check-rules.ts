import type { HealthCheckSpec } from '../contract/health-check';
import { keptNodeCondition } from '../contract/machine';
import { problem, type SpecProblem } from './spec-problem';

/**
 * A MachineHealthCheck's own rules. capt keeps a Node's conditions except those Kubernetes sets in their
 * healthy state (Ready True, the pressure conditions False), so a check on such a state would never match:
 * it is refused rather than silently remediating nothing (it would also mean every healthy Node).
 */
export function healthCheckProblems(namespace: string, check: HealthCheckSpec): SpecProblem[] {
  const subject = { kind: 'MachineHealthCheck', namespace, name: check.name };
  const out: SpecProblem[] = [];
  check.unhealthyNodeConditions.forEach((c, i) => {
    if (!keptNodeCondition(c)) {
      out.push(
        problem(
          subject,
          `spec.checks.unhealthyNodeConditions[${i}].status`,
          `${c.type}=${c.status} is the healthy state of that condition, so every healthy Node would be remediated`,
          c.type === 'Ready'
            ? 'check Ready with status Unknown or False'
            : `check ${c.type} with status True (or Unknown)`,
        ),
      );
    }
  });
  const range = check.unhealthyRange;
  if (range && range.min > range.max) {
    out.push(
      problem(
        subject,
        'spec.remediation.triggerIf.unhealthyInRange',
        `[${range.min}-${range.max}] is empty: its lower bound is above its upper bound`,
        'write the range as [min-max]',
      ),
    );
  }
  if (range && check.maxUnhealthy !== undefined) {
    out.push(
      problem(
        subject,
        'spec.remediation.triggerIf',
        'unhealthyLessThanOrEqualTo and unhealthyInRange are both set',
        'set one of them',
      ),
    );
  }
  return out;
}
