import { deepEqual, getAt, isObject, setAt, type Json, type Path } from './json-tree';

/**
 * What one version cannot hold of an object written in the other, kept on the converted object in Cluster API's
 * annotation `cluster.x-k8s.io/conversion-data`, so that converting back gives the object as it was written.
 *
 * Cluster API keeps the whole hub object there; capt keeps only the fields that came back different, each with
 * the value the plain conversion gave back at the time (`was`). A field is restored only while the plain
 * conversion still gives that value: a change made meanwhile in the other version wins over the kept one.
 * So the data is small, and it is computed the same way in both directions (v1beta2 objects written as
 * v1beta1 keep their v1beta1-only fields too).
 */

export const conversionDataAnnotation = 'cluster.x-k8s.io/conversion-data';

/** One field of the source version: its path, its value (absent: it was absent) and what the plain conversion gave back. */
export interface KeptField {
  path: Path;
  value?: unknown;
  was?: unknown;
}

export interface ConversionData {
  /** The version whose fields these are. */
  restores: string;
  fields: KeptField[];
}

/** The fields where `got` differs from `want`, as deep as both are objects (or lists of the same length). */
export function differences(want: unknown, got: unknown, path: Path = []): KeptField[] {
  if (deepEqual(want, got)) return [];
  if (isObject(want) && isObject(got)) {
    const keys = [...new Set([...Object.keys(want), ...Object.keys(got)])].sort();
    return keys.flatMap((k) => differences(want[k], got[k], [...path, k]));
  }
  if (Array.isArray(want) && Array.isArray(got) && want.length === got.length)
    return want.flatMap((item, i) => differences(item, got[i], [...path, i]));
  const field: KeptField = { path };
  if (want !== undefined) field.value = want;
  if (got !== undefined) field.was = got;
  return [field];
}

/** Puts back each kept field whose place still holds what the plain conversion gave when it was kept. */
export function restoreFields(object: Json, fields: KeptField[]): void {
  for (const field of fields) {
    if (!deepEqual(getAt(object, field.path), field.was)) continue;
    if ('value' in field) setAt(object, field.path, field.value);
    else {
      const parent = getAt(object, field.path.slice(0, -1));
      if (isObject(parent)) delete parent[field.path[field.path.length - 1] as string];
    }
  }
}

const isKeptField = (v: unknown): v is KeptField =>
  isObject(v) && Array.isArray(v.path) && v.path.every((k) => typeof k === 'string' || typeof k === 'number');

/** capt's conversion data in `annotations`, if that is what the annotation holds (Cluster API's own is left alone). */
export function readConversionData(annotations: Record<string, string> | undefined): ConversionData | undefined {
  const text = annotations?.[conversionDataAnnotation];
  if (text === undefined) return undefined;
  try {
    const data = JSON.parse(text) as unknown;
    if (isObject(data) && typeof data.restores === 'string' && Array.isArray(data.fields))
      if (data.fields.every(isKeptField)) return data as unknown as ConversionData;
  } catch {
    // Not JSON: not capt's; it passes through as any other annotation.
  }
  return undefined;
}
