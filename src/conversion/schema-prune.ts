import { isObject, type Json, type Path } from './json-tree';

/**
 * What the apiserver does to a converted object with the target version's schema: a field the schema does not
 * declare is dropped (unless its schema preserves unknown fields), and a field it defaults is set. Done here
 * first, so that what the target cannot hold, and what it adds (v1beta1 defaults a control plane's rollout
 * strategy), are known before the object leaves the webhook and go into the conversion data.
 */

export interface Schema {
  type?: string;
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  items?: Schema;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-embedded-resource'?: boolean;
  default?: unknown;
}

/** What every object keeps whatever its schema: the apiserver handles these itself. */
const rootFields = new Set(['apiVersion', 'kind', 'metadata']);

function prune(value: unknown, schema: Schema | undefined, path: Path, pruned: Path[]): unknown {
  if (!schema) return value;
  if (Array.isArray(value)) return value.map((item, i) => prune(item, schema.items, [...path, i], pruned));
  if (!isObject(value)) return value;
  const preserve = schema['x-kubernetes-preserve-unknown-fields'] === true;
  const additional = isObject(schema.additionalProperties) ? (schema.additionalProperties as Schema) : undefined;
  const embedded = schema['x-kubernetes-embedded-resource'] === true || path.length === 0;
  const out: Json = {};
  for (const [key, child] of Object.entries(value)) {
    const declared = schema.properties?.[key] ?? additional;
    // An object's own metadata is the apiserver's; only a template's (declared in full) is pruned here.
    if (embedded && key === 'metadata' && !declared?.properties) out[key] = child;
    else if (declared) out[key] = prune(child, declared, [...path, key], pruned);
    else if (preserve || schema.additionalProperties === true || (embedded && rootFields.has(key))) out[key] = child;
    else pruned.push([...path, key]);
  }
  for (const [key, declared] of Object.entries(schema.properties ?? {}))
    if (!(key in out) && declared.default !== undefined)
      out[key] = prune(structuredClone(declared.default), declared, [...path, key], pruned);
  return out;
}

/** `object` as the apiserver would keep it under `schema` (pruned, defaulted), and the paths of what it would drop. */
export function pruneToSchema(object: Json, schema: Schema): { object: Json; pruned: Path[] } {
  const pruned: Path[] = [];
  return { object: prune(object, schema, [], pruned) as Json, pruned };
}
