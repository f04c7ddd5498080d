import { annotations } from '../api/kinds/common';

/** What `capt annotate machine` changes: keys to set (to their values) and keys to remove. */
export interface AnnotationChange {
  set: Record<string, string>;
  remove: string[];
}

/** `current` with `change` made: removals of keys it lacks do nothing, as kubectl's. */
export function annotated(current: Record<string, string>, change: AnnotationChange): Record<string, string> {
  const kept = Object.entries(current).filter(([key]) => !change.remove.includes(key));
  return { ...Object.fromEntries(kept), ...change.set };
}

/** Why `record` breaks Kubernetes' rules for annotations (a key's form, the total size), or undefined. */
export function annotationsProblem(record: Record<string, string>): string | undefined {
  const parsed = annotations.safeParse(record);
  return parsed.success ? undefined : parsed.error.issues.map((i) => i.message).join('; ');
}

/**
 * kubectl annotate's arguments: `KEY=VALUE` sets, `KEY-` removes. Each problem names the argument it is in;
 * `problem` builds the error the caller throws.
 */
export function parseAnnotationArgs(args: string[], problem: (message: string) => Error): AnnotationChange {
  const change: AnnotationChange = { set: {}, remove: [] };
  const seen = new Set<string>();
  for (const arg of args) {
    const eq = arg.indexOf('=');
    const key = eq >= 0 ? arg.slice(0, eq) : arg.endsWith('-') ? arg.slice(0, -1) : undefined;
    if (key === undefined)
      throw problem(`${JSON.stringify(arg)}: write KEY=VALUE to set an annotation or KEY- to remove one`);
    if (seen.has(key)) throw problem(`${JSON.stringify(arg)}: ${key} is named twice; name each key once`);
    seen.add(key);
    const invalid = annotationsProblem({ [key]: '' });
    if (invalid) throw problem(`${JSON.stringify(arg)}: ${invalid}`);
    if (eq >= 0) change.set[key] = arg.slice(eq + 1);
    else change.remove.push(key);
  }
  return change;
}
