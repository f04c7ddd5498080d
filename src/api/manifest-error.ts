/** Where a problem is: the file, the document's index in it, its kind/name, and the field path. */
export interface ManifestLocation {
  file: string;
  index: number;
  kind?: string;
  name?: string;
  path?: string;
}

export interface ManifestProblem extends ManifestLocation {
  message: string;
  hint?: string;
  /**
   * A reference to an object the manifests do not hold. Objects applied one by one (kubectl, GitOps) are
   * incomplete until the last arrives, so admission lets this problem alone through.
   */
  missing?: true;
}

/** Every problem found in a set of manifests; nothing is submitted while there is one. */
export class ManifestError extends Error {
  constructor(readonly problems: ManifestProblem[]) {
    super(problems.map(formatProblem).join('\n'));
    this.name = 'ManifestError';
  }
}

export function formatProblem(p: ManifestProblem): string {
  const what = p.kind ? ` ${p.kind}${p.name ? `/${p.name}` : ''}` : '';
  const where = `${p.file} (document ${p.index + 1})${what}${p.path ? ` at ${p.path}` : ''}`;
  return `${where}: ${p.message}${p.hint ? `\n  hint: ${p.hint}` : ''}`;
}
