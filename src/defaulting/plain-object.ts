/**
 * The plain JSON of an object as the apiserver sends it to a webhook, before its schema is checked: any field
 * may be missing, null or of the wrong type. Defaulting reads and writes it through these helpers, which
 * never default under a value of the wrong type (the schema refuses that value afterwards, with its message).
 */
export type PlainObject = Record<string, unknown>;

export const isPlainObject = (v: unknown): v is PlainObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `parent[key]` as an object, made empty when missing or null; undefined when it holds something else. */
export function child(parent: PlainObject | undefined, key: string): PlainObject | undefined {
  if (!parent) return undefined;
  const value = parent[key];
  if (value === undefined || value === null) return (parent[key] = {});
  return isPlainObject(value) ? value : undefined;
}

/** The object at `path` under `root`, each missing step made empty (see `child`). */
export const at = (root: PlainObject | undefined, ...path: string[]): PlainObject | undefined =>
  path.reduce<PlainObject | undefined>((o, key) => child(o, key), root);

/** Sets `parent[key]` when it is missing or null: a value the user wrote is never replaced. */
export function setDefault(parent: PlainObject | undefined, key: string, value: unknown): void {
  if (parent && (parent[key] === undefined || parent[key] === null)) parent[key] = value;
}

/** Cluster API tolerates a Kubernetes version written without its "v" (1.36.3) and stores it with one. */
export function prefixVersion(parent: PlainObject | undefined, key = 'version'): void {
  const version = parent?.[key];
  if (typeof version === 'string' && version !== '' && !version.startsWith('v')) parent![key] = `v${version}`;
}

export const clusterNameLabel = 'cluster.x-k8s.io/cluster-name';

/**
 * Cluster API's controllers find an object's cluster by this label, so its webhooks set it on the object
 * (and selectors) to `spec.clusterName`, whatever was there: the one label defaulting overwrites.
 */
export function labelClusterName(labels: PlainObject | undefined, spec: PlainObject | undefined): void {
  const clusterName = spec?.clusterName;
  if (labels && typeof clusterName === 'string') labels[clusterNameLabel] = clusterName;
}

/** One kind's defaulting: fills `object` in place (a copy the caller made); `old` is the stored object of an update. */
export type Defaulting = (object: PlainObject, old: PlainObject | undefined) => void;

/** The object's name (the apiserver sends every object with one). */
export const nameOf = (o: PlainObject) => String(at(o, 'metadata')?.name);

/** `spec.replicas` of the stored object of an update. */
export const oldReplicas = (old: PlainObject | undefined) => (isPlainObject(old?.spec) ? old.spec.replicas : undefined);
