/**
 * Plain JSON trees as the apiserver sends objects, addressed by paths of keys and indexes: the few operations
 * conversion needs (read, write, remove, compare), with no knowledge of any kind.
 */

export type Json = Record<string, unknown>;
export type Path = (string | number)[];

export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `a.b.c` as a path; conversion rules are written with dots. */
export const pathOf = (dotted: string): Path => (dotted === '' ? [] : dotted.split('.'));

export function getAt(tree: unknown, path: Path): unknown {
  let node = tree;
  for (const key of path) {
    if (typeof key === 'number' ? !Array.isArray(node) : !isObject(node)) return undefined;
    node = (node as Record<string | number, unknown>)[key];
  }
  return node;
}

/** Writes `value` at `path`, making the objects (or, before an index, the arrays) on the way. */
export function setAt(tree: Json, path: Path, value: unknown): void {
  let node: Record<string | number, unknown> = tree;
  path.forEach((key, i) => {
    if (i === path.length - 1) {
      node[key] = value;
      return;
    }
    const next = path[i + 1];
    const wanted = typeof next === 'number' ? Array.isArray(node[key]) : isObject(node[key]);
    if (!wanted) node[key] = typeof next === 'number' ? [] : {};
    node = node[key] as Record<string | number, unknown>;
  });
}

/**
 * Removes what is at `path` and returns it; an object left empty on the way by this removal goes too, so a
 * field moved out of `status.v1beta2` does not leave `v1beta2: {}` behind.
 */
export function takeAt(tree: Json, path: Path): unknown {
  if (path.length === 0) return undefined;
  const parent = getAt(tree, path.slice(0, -1));
  const key = path[path.length - 1]!;
  if (!isObject(parent) || !(key in parent)) return undefined;
  const value = parent[key as string];
  delete parent[key as string];
  if (Object.keys(parent).length === 0 && path.length > 1) takeAt(tree, path.slice(0, -1));
  return value;
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((v, i) => deepEqual(v, b[i]));
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => k in b && deepEqual(a[k], b[k]));
  }
  return false;
}

export const clone = <T>(v: T): T => structuredClone(v);

/** `object` without its undefined fields, as JSON would carry it. */
export const defined = (object: Json): Json =>
  Object.fromEntries(Object.entries(object).filter(([, v]) => v !== undefined));
