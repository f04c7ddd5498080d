import type { ValueMapping } from './field-moves';
import { defined, isObject, type Json } from './json-tree';

/**
 * The value changes between v1beta1 and v1beta2 that recur across kinds. Each returns `undefined` for a value
 * it cannot read (a malformed duration): the field is then left out of the target, and the conversion data
 * keeps it as it was.
 */

const unitSeconds: Record<string, number> = { ns: 1e-9, us: 1e-6, µs: 1e-6, μs: 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 };
const durationPattern = /^([-+]?)((?:(?:\d+\.?\d*|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+|0)$/;

/** Seconds in a Go duration (`1m30s`, `1.5h`), as metav1.Duration writes and reads it. */
export function durationSeconds(text: string): number | undefined {
  const match = durationPattern.exec(text);
  if (!match) return undefined;
  let total = 0;
  for (const [, amount, unit] of match[2]!.matchAll(/(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g))
    total += Number(amount) * unitSeconds[unit!]!;
  return Math.trunc(match[1] === '-' ? -total : total);
}

/** A whole number of seconds as Go prints a duration: `0s`, `45s`, `10m0s`, `1h30m0s`. */
export function goDuration(seconds: number): string {
  const sign = seconds < 0 ? '-' : '';
  let rest = Math.abs(seconds);
  if (rest === 0) return '0s';
  const hours = Math.floor(rest / 3600);
  rest -= hours * 3600;
  const minutes = Math.floor(rest / 60);
  const secs = rest - minutes * 60;
  if (hours > 0) return `${sign}${hours}h${minutes}m${secs}s`;
  if (minutes > 0) return `${sign}${minutes}m${secs}s`;
  return `${sign}${secs}s`;
}

/** v1beta1's durations (`nodeDrainTimeout: 10m`) are v1beta2's whole seconds (`nodeDrainTimeoutSeconds: 600`). */
export const seconds: ValueMapping = {
  up: (v) => (typeof v === 'string' ? durationSeconds(v) : undefined),
  down: (v) => (typeof v === 'number' && Number.isInteger(v) ? goDuration(v) : undefined),
};

/** kubeadm's extra arguments: a map in v1beta1, a list of name and value in v1beta2 (sorted by name, as Cluster API sorts them). */
export const args: ValueMapping = {
  up: (v) =>
    isObject(v)
      ? Object.keys(v)
          .sort()
          .map((name) => defined({ name, value: v[name] }))
      : undefined,
  down: (v) =>
    Array.isArray(v) && v.every((a) => isObject(a) && typeof a.name === 'string')
      ? Object.fromEntries((v as Json[]).map((a) => [a.name as string, a.value]))
      : undefined,
};

/** The API version a reference names in v1beta1: its group's v1beta2, the contract every kind capt serves implements. */
const contractVersion = 'v1beta2';

const groupOf = (apiVersion: unknown) =>
  typeof apiVersion === 'string' && apiVersion.includes('/') ? apiVersion.split('/')[0] : undefined;

/**
 * v1beta1's object references (apiVersion, kind, name, namespace) are v1beta2's contract-versioned references
 * (apiGroup, kind, name): the version is the contract's, the namespace always the referring object's.
 */
export const contractReference: ValueMapping = {
  up: (v) => (isObject(v) ? defined({ apiGroup: groupOf(v.apiVersion), kind: v.kind, name: v.name }) : undefined),
  down: (v, { namespace }) =>
    isObject(v)
      ? defined({
          apiVersion: typeof v.apiGroup === 'string' ? `${v.apiGroup}/${contractVersion}` : undefined,
          kind: v.kind,
          name: v.name,
          namespace,
        })
      : undefined,
};

/** A MachineHealthCheck's remediation template: an object reference in v1beta1, apiVersion, kind and name in v1beta2. */
export const remediationTemplate: ValueMapping = {
  up: (v) => (isObject(v) ? defined({ apiVersion: v.apiVersion, kind: v.kind, name: v.name }) : undefined),
  down: (v, { namespace }) => (isObject(v) ? defined({ ...v, namespace }) : undefined),
};

/** A Machine's node: an object reference in v1beta1, its name only in v1beta2. */
export const nodeReference: ValueMapping = {
  up: (v) => (isObject(v) ? defined({ name: v.name }) : undefined),
  down: (v) => (isObject(v) ? defined({ apiVersion: 'v1', kind: 'Node', name: v.name }) : undefined),
};

/** A Cluster's failure domains: a map by name in v1beta1, a list sorted by name in v1beta2. */
export const failureDomains: ValueMapping = {
  up: (v) =>
    isObject(v)
      ? Object.keys(v)
          .sort()
          .map((name) => {
            const domain = isObject(v[name]) ? v[name] : {};
            return defined({ name, controlPlane: domain.controlPlane === true, attributes: domain.attributes });
          })
      : undefined,
  down: (v) =>
    Array.isArray(v) && v.every((d) => isObject(d) && typeof d.name === 'string')
      ? Object.fromEntries(
          (v as Json[]).map((d) => [
            d.name as string,
            defined({ controlPlane: d.controlPlane === true ? true : undefined, attributes: d.attributes }),
          ]),
        )
      : undefined,
};
