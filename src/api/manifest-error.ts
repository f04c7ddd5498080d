/** Where a problem is: the file, the document's index in it, its kind/name, and the field path. */
export interface ManifestLocation {
  file: string;
  index: number;
  kind?: string;
  name?: string;
  path?: string;
  /**
   * For an object made from another document's fields (a MachineHealthCheck from a ClusterClass's healthCheck):
   * a path under `from` in the made object is the path under `to` in that document, which is `at`.
   */
  reroot?: { at: ManifestLocation; paths: { from: string; to: string }[] };
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
  readonly problems: ManifestProblem[];
  constructor(problems: ManifestProblem[]) {
    const located = problems.map(rerooted);
    super(located.map(formatProblem).join('\n'));
    this.problems = located;
    this.name = 'ManifestError';
  }
}

/** The problem at the path of the document it was made from (see ManifestLocation.reroot). */
function rerooted({ reroot, ...p }: ManifestProblem): ManifestProblem {
  const rule = reroot?.paths.find(
    (r) => p.path === r.from || p.path?.startsWith(`${r.from}.`) || p.path?.startsWith(`${r.from}[`),
  );
  return rule ? { ...p, ...reroot!.at, path: `${rule.to}${p.path!.slice(rule.from.length)}` } : p;
}

export function formatProblem(p: ManifestProblem): string {
  const what = p.kind ? ` ${p.kind}${p.name ? `/${p.name}` : ''}` : '';
  const where = `${p.file} (document ${p.index + 1})${what}${p.path ? ` at ${p.path}` : ''}`;
  return `${where}: ${p.message}${p.hint ? `\n  hint: ${p.hint}` : ''}`;
}
