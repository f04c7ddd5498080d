import { isObject, type Json, type Path } from './json-tree';

/**
 * Structural pruning as the apiserver does it after a conversion: a field the target version's schema does not
 * declare is dropped (unless its schema preserves unknown fields). Done here first, so that whatever the target
 * cannot hold is known before the object leaves the webhook and goes into the conversion data, not silently lost.
 */

export interface Schema {
  type?: string;
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  items?: Schema;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-embedded-resource'?: boolean;
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
  return out;
}

/** `object` as the apiserver would keep it under `schema`, and the paths of what it would drop. */
export function pruneToSchema(object: Json, schema: Schema): { object: Json; pruned: Path[] } {
  const pruned: Path[] = [];
  return { object: prune(object, schema, [], pruned) as Json, pruned };
}
