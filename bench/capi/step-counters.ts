/**
 * Cheap counters that explain a step's figures: cumulative counts read from a system's own /metrics
 * endpoints before and after the step. A reading is grouped (`requestsByVerb` -> `GET` -> 1234); the
 * step records the difference, each group cut to its largest entries so a result stays a few dozen numbers.
 */
export type Counters = Record<string, Record<string, number>>;

/** How one system reads its counters, and the one line a step prints from their difference. */
export interface CounterSource {
  read(): Promise<Counters>;
  describe(delta: Counters): string;
}

/** One sample of the Prometheus text format: `name{label="value",...} number`. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const sampleLine = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const labelPair = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** The samples of the metrics named in `names` (other lines are skipped unparsed: an apiserver's page is megabytes). */
export function parseMetrics(text: string, names: readonly string[]): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!names.some((n) => line.startsWith(n))) continue;
    const m = sampleLine.exec(line);
    if (!m || !names.includes(m[1]!)) continue;
    const labels = Object.fromEntries([...(m[2] ?? '').matchAll(labelPair)].map((p) => [p[1]!, p[2]!]));
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

/** Sums the samples of `name` by the key `keyOf` gives each (a sample it gives no key is left out). */
export function sumBy(
  samples: Sample[],
  name: string,
  keyOf: (labels: Record<string, string>) => string | undefined,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of samples) {
    if (s.name !== name) continue;
    const key = keyOf(s.labels);
    if (key !== undefined) out[key] = (out[key] ?? 0) + s.value;
  }
  return out;
}

/** Reads a metrics page over plain HTTP (the managers' insecure diagnostics, Temporal's metrics port); an unreachable one reads as empty. */
export async function fetchMetrics(url: string): Promise<string> {
  return fetch(url, { signal: AbortSignal.timeout(10_000) }).then(
    (r) => (r.ok ? r.text() : ''),
    () => '',
  );
}

const keptPerGroup = 6;

/**
 * Per group, what each entry grew by between two readings, largest first: zeros are dropped, and past
 * the six largest the rest are summed as `other`.
 */
export function countersBetween(before: Counters, after: Counters): Counters {
  const out: Counters = {};
  for (const [group, entries] of Object.entries(after)) {
    const grown = Object.entries(entries)
      .map(([key, value]): [string, number] => [key, Math.round(value - (before[group]?.[key] ?? 0))])
      .filter(([, delta]) => delta !== 0)
      .sort((a, b) => b[1] - a[1]);
    const kept = grown.slice(0, keptPerGroup);
    const rest = grown.slice(keptPerGroup).reduce((sum, [, delta]) => sum + delta, 0);
    out[group] = Object.fromEntries(rest ? [...kept, ['other', rest]] : kept);
  }
  return out;
}

/** The sum of a group's entries. */
export const groupTotal = (delta: Counters, group: string) =>
  Object.values(delta[group] ?? {}).reduce((a, b) => a + b, 0);

/** `a 12, b 3` for a group, largest first (as countersBetween left it). */
export const groupList = (delta: Counters, group: string) =>
  Object.entries(delta[group] ?? {})
    .map(([k, n]) => `${k} ${n}`)
    .join(', ') || 'none';
