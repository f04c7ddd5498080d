/**
 * One broken rule of a spec: which object, which field (its v1beta2 path; the manifest loader names the
 * v1beta1 field for v1beta1 documents), what is wrong and how to fix it.
 */
export interface SpecProblem {
  kind: string;
  namespace: string;
  name: string;
  path: string;
  message: string;
  hint: string;
  /** UnsupportedVersion for the Kubernetes version rules; InvalidSpec for the rest. */
  type: 'InvalidSpec' | 'UnsupportedVersion';
}

/** The object a rule speaks of; its rules add the field, what is wrong and the fix. */
export type SpecSubject = Pick<SpecProblem, 'kind' | 'namespace' | 'name'>;

export const problem = (
  subject: SpecSubject,
  path: string,
  message: string,
  hint: string,
  type: SpecProblem['type'] = 'InvalidSpec',
): SpecProblem => ({ ...subject, path, message, hint, type });

/** A problem as one line for a refused update: `KubeadmControlPlane default/cp at spec.replicas: ...; fix: ...`. */
export const formatSpecProblem = (p: SpecProblem) =>
  `${p.kind} ${p.namespace}/${p.name} at ${p.path}: ${p.message}; ${p.hint}`;

/** A refusal's text, one problem a line: the same whether a workflow's validator or the client's dry run refuses. */
export const formatSpecProblems = (problems: SpecProblem[]) => problems.map(formatSpecProblem).join('\n');
