import { at, isPlainObject, type PlainObject } from './plain-object';

const isEmpty = (v: unknown) =>
  v === undefined || v === null || (isPlainObject(v) && !Object.keys(v).length) || (Array.isArray(v) && !v.length);

/**
 * A selector that selects nothing of its own (no matchLabels, no matchExpressions) gets `key: value`, and the
 * template's labels the same, so the owner selects exactly the machines its template makes. Returns the
 * selector's matchLabels.
 */
export function defaultSelector(
  selector: PlainObject | undefined,
  templateLabels: PlainObject | undefined,
  key: string,
  value: string,
): PlainObject | undefined {
  const unset = isEmpty(selector?.matchLabels) && isEmpty(selector?.matchExpressions);
  const matchLabels = at(selector, 'matchLabels');
  if (unset && matchLabels && templateLabels) {
    matchLabels[key] = value;
    templateLabels[key] = value;
  }
  return matchLabels;
}
