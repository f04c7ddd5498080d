import { createHash } from 'node:crypto';
import { parseAllDocuments } from 'yaml';
import type { ConfigMapDoc, ClusterResourceSetDoc, SecretDoc } from './kinds/addons';
import type { ManifestLocation, ManifestProblem } from './manifest-error';
import {
  maxResourceBytes,
  resourceKey,
  type AddonObject,
  type AddonResource,
  type ResourceKind,
  type ResourceSetModel,
} from '../contract/resource-set';

/** A ClusterResourceSet, ConfigMap or Secret document, validated by its schema (kinds/addons.ts). */
export interface AddonDocument {
  kind: 'ClusterResourceSet' | ResourceKind;
  namespace: string;
  name: string;
  loc: ManifestLocation;
  value: unknown;
}

/** What one apply gives of the addons: the sets, and the content of every ConfigMap and Secret, by namespace. */
export interface Addons {
  resourceSets: ResourceSetModel[];
  resources: (AddonResource & { namespace: string })[];
}

/** Cluster API creates these kinds first, in this order, within each data value (its SortForCreate); the rest keep theirs. */
const createFirst = [
  'Namespace',
  'CustomResourceDefinition',
  'StorageClass',
  'PersistentVolume',
  'PersistentVolumeClaim',
  'Secret',
  'ConfigMap',
  'ServiceAccount',
  'LimitRange',
  'Pod',
  'ReplicaSet',
  'Endpoint',
];
const priority = (kind: string) => (createFirst.includes(kind) ? createFirst.indexOf(kind) - 100 : 0);

/** Names and kinds become URL path segments of the workload apiserver: nothing that could leave its segment. */
const objectName = /^[A-Za-z0-9]([A-Za-z0-9._:-]{0,251}[A-Za-z0-9])?$/;
const objectKind = /^[A-Za-z][A-Za-z0-9]{0,62}$/;
const objectApiVersion = /^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?\/)?v[0-9][a-z0-9]{0,15}$/;
const namespaceName = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** The objects of one data value: a JSON list when it starts with `[`, else YAML (or JSON) documents. */
function objectsOf(value: string, at: string, problems: ManifestProblem[], loc: ManifestLocation): AddonObject[] {
  const problem = (path: string, message: string, hint?: string) =>
    void problems.push({ ...loc, path, message, ...(hint ? { hint } : {}) });
  let items: unknown[] = [];
  if (value.trimStart().startsWith('[')) {
    try {
      const list = JSON.parse(value) as unknown;
      items = Array.isArray(list) ? list : [];
    } catch (err) {
      problem(at, `not a JSON list of objects: ${(err as Error).message.split('\n')[0]}`);
      return [];
    }
  } else {
    for (const doc of parseAllDocuments(value)) {
      if (doc.errors.length) {
        problem(at, `not valid YAML: ${doc.errors[0]!.message.split('\n')[0]}`);
        return [];
      }
      try {
        const item = doc.toJS() as unknown;
        if (item !== null && item !== undefined) items.push(item);
      } catch (err) {
        problem(at, `not valid YAML: ${(err as Error).message.split('\n')[0]}`);
        return [];
      }
    }
  }
  const objects: AddonObject[] = [];
  items.forEach((item, i) => {
    const path = `${at}[${i}]`;
    const o = item as Partial<AddonObject> | null;
    if (typeof o !== 'object' || o === null || Array.isArray(o))
      return problem(path, 'an object must be a mapping with apiVersion, kind and metadata');
    if (typeof o.apiVersion !== 'string' || !objectApiVersion.test(o.apiVersion))
      return problem(`${path}.apiVersion`, 'apiVersion is missing or not GROUP/VERSION', 'e.g. apps/v1 or v1');
    if (typeof o.kind !== 'string' || !objectKind.test(o.kind))
      return problem(`${path}.kind`, 'kind is missing or not a Kubernetes kind', 'e.g. Deployment');
    const name = o.metadata?.name;
    if (typeof name !== 'string' || !objectName.test(name))
      return problem(
        `${path}.metadata.name`,
        'metadata.name is missing or not a Kubernetes name',
        'at most 253 letters, digits, ".", "-", "_" or ":", starting and ending with a letter or digit',
      );
    const ns = o.metadata?.namespace;
    if (ns !== undefined && (typeof ns !== 'string' || !namespaceName.test(ns)))
      return problem(`${path}.metadata.namespace`, 'metadata.namespace is not a namespace name', 'a DNS label');
    objects.push(o as AddonObject);
  });
  // Stable: objects of one priority keep their order.
  return objects
    .map((o, i) => ({ o, i }))
    .sort((a, b) => priority(a.o.kind) - priority(b.o.kind) || a.i - b.i)
    .map(({ o }) => o);
}

/** A ConfigMap's or Secret's values by key (a Secret's decoded, `stringData` over `data` as the apiserver merges them). */
function dataOf(d: AddonDocument): Record<string, string> {
  if (d.kind === 'ConfigMap') return (d.value as ConfigMapDoc).data;
  const s = d.value as SecretDoc;
  const decoded = Object.fromEntries(
    Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
  );
  return { ...decoded, ...(s.stringData ?? {}) };
}

/** Cluster API's hash of a resource: sha256 over its values in sorted key order, nothing between them. */
export function resourceHash(data: Record<string, string>): string {
  const h = createHash('sha256');
  for (const key of Object.keys(data).sort()) h.update(data[key]!);
  return `sha256:${h.digest('hex')}`;
}

function resourceOf(d: AddonDocument, problems: ManifestProblem[]): AddonResource & { namespace: string } {
  const data = dataOf(d);
  const field = d.kind === 'Secret' && !(d.value as SecretDoc).data ? 'stringData' : 'data';
  const objects = Object.keys(data)
    .sort()
    .flatMap((key) => objectsOf(data[key]!, `${field}.${key}`, problems, d.loc));
  return { namespace: d.namespace, kind: d.kind as ResourceKind, name: d.name, hash: resourceHash(data), objects };
}

function resourceSetOf(d: AddonDocument): ResourceSetModel {
  const doc = d.value as ClusterResourceSetDoc;
  return {
    namespace: d.namespace,
    name: d.name,
    selector: doc.spec.clusterSelector,
    strategy: doc.spec.strategy ?? 'ApplyOnce',
    resources: (doc.spec.resources ?? []).map((r) => ({ kind: r.kind, name: r.name })),
  };
}

/**
 * The sets and resources of one apply. A resource named twice in a set, or a set or resource given twice, is
 * refused; whether a set's resources exist is for the client to say, which knows what running sets hold.
 */
export function loadAddons(documents: AddonDocument[], problems: ManifestProblem[]): Addons {
  const seen = new Map<string, ManifestLocation>();
  for (const d of documents) {
    const id = `${d.kind}/${d.namespace}/${d.name}`;
    const first = seen.get(id);
    if (first)
      problems.push({
        ...d.loc,
        message: `${d.kind} ${d.namespace}/${d.name} is given twice (first in ${first.file}, document ${first.index + 1})`,
        hint: 'keep one of them',
      });
    seen.set(id, d.loc);
  }
  const setDocuments = documents.filter((d) => d.kind === 'ClusterResourceSet');
  const resourceSets = setDocuments.map(resourceSetOf);
  resourceSets.forEach((set, i) => {
    const keys = set.resources.map(resourceKey);
    keys.forEach((k, j) => {
      if (keys.indexOf(k) !== j)
        problems.push({
          ...setDocuments[i]!.loc,
          path: `spec.resources[${j}]`,
          message: `${k} is named twice`,
          hint: 'name each ConfigMap or Secret once',
        });
    });
  });
  const resources = documents.filter((d) => d.kind !== 'ClusterResourceSet').map((d) => resourceOf(d, problems));
  const bytes = Buffer.byteLength(JSON.stringify(resources));
  if (bytes > maxResourceBytes)
    problems.push({
      ...documents.find((d) => d.kind !== 'ClusterResourceSet')!.loc,
      message: `the ConfigMaps and Secrets of this apply come to ${bytes} bytes as capt carries them, over ${maxResourceBytes >> 10} KiB`,
      hint: 'split the addons over several ClusterResourceSets applied apart, or make their manifests smaller',
    });
  return { resourceSets, resources };
}
