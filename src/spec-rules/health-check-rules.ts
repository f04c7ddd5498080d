import { checkedMachineConditions, type HealthCheckSpec } from '../contract/health-check';
import { keptNodeCondition, machineConditionTypes } from '../contract/machine';
import { problem, type SpecProblem, type SpecSubject } from './spec-problem';

/** The machine conditions Cluster API's MachineHealthCheck schema refuses to check (its CEL rule). */
const refusedByClusterApi = ['Ready', 'Available', 'HealthCheckSucceeded', 'OwnerRemediated', 'ExternallyRemediated'];
const checkNodeReady = 'check NodeReady with status Unknown or False (Unknown until the machine has a Node)';

/** Why a check on the machine condition `type` can never be judged right, if it cannot. */
function uncheckedMachineCondition(type: string): string | undefined {
  if (checkedMachineConditions.includes(type)) return undefined;
  if (refusedByClusterApi.includes(type))
    return `Cluster API refuses a check on a Machine's ${type}: type must not be one of ${refusedByClusterApi.join(', ')}`;
  if ((machineConditionTypes as readonly string[]).includes(type))
    return `capt sets ${type} on a Machine, but the owner that judges its machines keeps no transitions of it, so this check would be judged wrong`;
  return `capt sets no ${type} condition on a Machine (it sets ${machineConditionTypes.join(', ')}), so this check would never match`;
}

/** A check on a machine's own conditions names one capt judges, in a state that is not its healthy one. */
function machineConditionProblems(subject: SpecSubject, check: HealthCheckSpec): SpecProblem[] {
  return (check.unhealthyMachineConditions ?? []).flatMap((c, i) => {
    const at = `spec.checks.unhealthyMachineConditions[${i}]`;
    const unchecked = uncheckedMachineCondition(c.type);
    if (unchecked) return [problem(subject, `${at}.type`, unchecked, checkNodeReady)];
    if (c.status === 'True')
      return [
        problem(
          subject,
          `${at}.status`,
          `${c.type}=True is the healthy state of that condition, so every healthy machine would be remediated`,
          checkNodeReady,
        ),
      ];
    return [];
  });
}

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
  out.push(...machineConditionProblems(subject, check));
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
