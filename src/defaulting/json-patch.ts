import { isDeepStrictEqual } from 'node:util';
import { isPlainObject } from './plain-object';

/** An RFC 6902 operation, as an AdmissionReview's JSONPatch response carries them. */
export type PatchOperation = { op: 'add' | 'replace'; path: string; value: unknown } | { op: 'remove'; path: string };

/** RFC 6901: "~" and "/" in a key (label keys have a "/") are escaped in a pointer. */
const escape = (key: string) => key.replaceAll('~', '~0').replaceAll('/', '~1');

/**
 * The operations that turn `before` into `after`: objects are compared key by key, so a default under an
 * object the user wrote is one `add` and the user's other keys are untouched; anything else that differs
 * (an array, a scalar) is replaced whole.
 */
export function jsonPatch(before: unknown, after: unknown, path = ''): PatchOperation[] {
  if (isDeepStrictEqual(before, after)) return [];
  if (!isPlainObject(before) || !isPlainObject(after)) return [{ op: 'replace', path, value: after }];
  const ops: PatchOperation[] = [];
  for (const key of Object.keys(before))
    if (!(key in after)) ops.push({ op: 'remove', path: `${path}/${escape(key)}` });
  for (const [key, value] of Object.entries(after)) {
    const at = `${path}/${escape(key)}`;
    ops.push(...(key in before ? jsonPatch(before[key], value, at) : [{ op: 'add' as const, path: at, value }]));
  }
  return ops;
}
