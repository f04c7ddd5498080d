/** A Kubernetes label selector (metav1.LabelSelector): every matchLabels pair and every expression must hold. */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[] }[];
}

/** A selector with neither part: Cluster API's ClusterResourceSet selects nothing with it, and capt refuses it. */
export const emptySelector = (s: LabelSelector) =>
  !Object.keys(s.matchLabels ?? {}).length && !(s.matchExpressions ?? []).length;

export function selectorMatches(s: LabelSelector, labels: Record<string, string>): boolean {
  if (emptySelector(s)) return false;
  const has = (k: string) => Object.hasOwn(labels, k);
  return (
    Object.entries(s.matchLabels ?? {}).every(([k, v]) => has(k) && labels[k] === v) &&
    (s.matchExpressions ?? []).every((e) => {
      const values = e.values ?? [];
      switch (e.operator) {
        case 'In':
          return has(e.key) && values.includes(labels[e.key]!);
        case 'NotIn':
          return !has(e.key) || !values.includes(labels[e.key]!);
        case 'Exists':
          return has(e.key);
        case 'DoesNotExist':
          return !has(e.key);
      }
    })
  );
}

/** As kubectl prints a selector: `a=b,c in (d,e),!f`. */
export function selectorText(s: LabelSelector): string {
  return [
    ...Object.entries(s.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`),
    ...(s.matchExpressions ?? []).map((e) =>
      e.operator === 'Exists'
        ? e.key
        : e.operator === 'DoesNotExist'
          ? `!${e.key}`
          : `${e.key} ${e.operator === 'In' ? 'in' : 'notin'} (${(e.values ?? []).join(',')})`,
    ),
  ].join(',');
}
