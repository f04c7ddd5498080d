import { invalidSpec, unsupportedVersion } from '../../src/errors';
import { formatSpecProblems, type SpecProblem } from '../../src/spec-rules/spec-problem';

/**
 * An update validator's end: refuses the update, before anything reaches history, with every broken spec
 * rule (one a line), typed after the first one (UnsupportedVersion or InvalidSpec).
 */
export function refuseProblems(problems: SpecProblem[]): void {
  if (!problems.length) return;
  const message = formatSpecProblems(problems);
  throw problems[0]!.type === 'UnsupportedVersion' ? unsupportedVersion(message) : invalidSpec(message);
}
