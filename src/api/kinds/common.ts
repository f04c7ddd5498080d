import { z } from 'zod';
import { dnsNameMaxLength, dnsNamePattern, dnsNameRule } from '../../util/checked-paths';

/** Schema pieces shared by the Cluster API kinds. */
export const dnsName = z.string().regex(dnsNamePattern, dnsNameRule).max(dnsNameMaxLength);

/** Kubernetes' qualified names (label and annotation keys): an optional DNS-name prefix and '/', then 1-63 of [A-Za-z0-9-_.], alphanumeric at both ends. */
const qualifiedName =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const validKey = (key: string) => qualifiedName.test(key) && (!key.includes('/') || key.indexOf('/') <= 253);
const keyRule =
  'a key is an optional DNS-name prefix and "/", then 1 to 63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit';
/** Kubernetes' limit on all of an object's annotations together. */
const maxAnnotationBytes = 256 << 10;

const labelValue = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;
const valueRule =
  'a label value is at most 63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit, or empty';
const quoted = (key: string) => JSON.stringify(key.length > 80 ? `${key.slice(0, 80)}...` : key);

/** Labels by Kubernetes' rules: qualified-name keys, values of at most 63 of [A-Za-z0-9-_.], alphanumeric at both ends, or empty. */
export const labels = z.record(z.string(), z.string()).superRefine((record, ctx) => {
  for (const [key, value] of Object.entries(record)) {
    if (!validKey(key)) ctx.addIssue({ code: 'custom', path: [key], message: `label key ${quoted(key)}: ${keyRule}` });
    else if (!labelValue.test(value))
      ctx.addIssue({ code: 'custom', path: [key], message: `label value ${quoted(value)}: ${valueRule}` });
  }
});
/** Annotations by Kubernetes' rules: qualified-name keys; values any text, all of them together at most 256 KiB. */
export const annotations = z.record(z.string(), z.string()).superRefine((record, ctx) => {
  for (const key of Object.keys(record))
    if (!validKey(key))
      ctx.addIssue({ code: 'custom', path: [key], message: `annotation key ${quoted(key)}: ${keyRule}` });
  const bytes = Object.entries(record).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v), 0);
  if (bytes > maxAnnotationBytes)
    ctx.addIssue({
      code: 'custom',
      message: `annotations are over ${maxAnnotationBytes >> 10} KiB together (${bytes} bytes), Kubernetes' limit`,
    });
});
export const labelsAndAnnotations = z
  .object({ labels: labels.optional(), annotations: annotations.optional() })
  .strict();

export const metadata = z
  .object({
    name: dnsName,
    namespace: dnsName.optional(),
    labels: labels.optional(),
    annotations: annotations.optional(),
  })
  .strict();

export const kubernetesVersion = z.string().regex(/^v\d+\.\d+\.\d+$/, 'must be a Kubernetes version like v1.36.3');

/** Go-style durations as v1beta1 writes them ("90s", "10m", "1h30m"), in seconds. */
export const duration = z.string().transform((value, ctx) => {
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/g;
  let total = 0;
  let consumed = '';
  for (const m of value.matchAll(re)) {
    total += Number(m[1]) * { ms: 0.001, s: 1, m: 60, h: 3600 }[m[2] as 'ms' | 's' | 'm' | 'h'];
    consumed += m[0];
  }
  if (value === '0') return 0;
  if (!consumed || consumed !== value) {
    ctx.addIssue({ code: 'custom', message: `'${value}' is not a duration; write it like 90s, 10m or 1h30m` });
    return z.NEVER;
  }
  return Math.round(total);
});

export const seconds = z.number().int('must be a whole number of seconds').min(0, 'must be >= 0');

export const intOrPercent = z.union([
  z.number().int().min(0, 'must be >= 0'),
  z.string().regex(/^\d+%$/, 'must be a number or a percentage like 25%'),
]);

/** v1beta1 object reference. */
export const refV1beta1 = z
  .object({ apiVersion: z.string(), kind: z.string(), name: dnsName, namespace: dnsName.optional() })
  .strict();
/** v1beta2 contract reference. */
export const refV1beta2 = z.object({ apiGroup: z.string(), kind: z.string(), name: dnsName }).strict();

export interface Ref {
  group: string;
  kind: string;
  name: string;
  namespace?: string;
}

export const fromV1beta1Ref = (r: z.infer<typeof refV1beta1>): Ref => ({
  group: r.apiVersion.split('/')[0]!,
  kind: r.kind,
  name: r.name,
  namespace: r.namespace,
});
export const fromV1beta2Ref = (r: z.infer<typeof refV1beta2>): Ref => ({
  group: r.apiGroup,
  kind: r.kind,
  name: r.name,
});

export const taint = z
  .object({
    key: z.string(),
    value: z.string().optional(),
    effect: z.enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute']),
  })
  .strict();

/** Taints Cluster API keeps on Nodes itself (a Node's initialization, an outdated revision): a manifest cannot set them. */
const reservedTaints = ['node.cluster.x-k8s.io/uninitialized', 'node.cluster.x-k8s.io/outdated-revision'];

/** A machine's taints, as Cluster API v1.12's MachineTaint list (spec.taints): each key and effect at most once. */
export const machineTaints = z
  .array(
    z
      .object({
        key: z
          .string()
          .max(317)
          .refine(validKey, { message: `taint key: ${keyRule}` }),
        value: z.string().min(1).regex(labelValue, `taint value: ${valueRule}`).optional(),
        effect: z.enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute']),
        propagation: z.enum(['Always', 'OnInitialization']),
      })
      .strict(),
  )
  .min(1)
  .max(64)
  .superRefine((taints, ctx) => {
    const seen = new Set<string>();
    taints.forEach((t, i) => {
      if (reservedTaints.includes(t.key))
        ctx.addIssue({
          code: 'custom',
          path: [i, 'key'],
          message: `taint ${t.key} is Cluster API's own: it sets and removes it on Nodes itself`,
        });
      if (seen.has(`${t.key}:${t.effect}`))
        ctx.addIssue({ code: 'custom', path: [i], message: `taint ${t.key} with effect ${t.effect} is given twice` });
      seen.add(`${t.key}:${t.effect}`);
    });
  });
