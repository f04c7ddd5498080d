/**
 * Kubernetes resource quantities ("250m", "16Gi", "1.5G", "2e3") as plain numbers, for reporting: CPU in
 * cores, memory in bytes. Precision beyond a float's is of no use to a health report.
 */
const suffixes: Record<string, number> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

/** The quantity's value; NaN when it is not one. */
export function parseQuantity(text: string): number {
  const match = /^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)([a-zA-Z]*)$/.exec(text.trim());
  const factor = match ? suffixes[match[2]!] : undefined;
  return match && factor !== undefined ? Number(match[1]) * factor : Number.NaN;
}
