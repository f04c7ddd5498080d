import { z } from 'zod';
import { dnsNameMaxLength, dnsNamePattern, dnsNameRule } from '../../util/checked-paths';

/** Schema pieces shared by the Cluster API kinds. */
export const dnsName = z.string().regex(dnsNamePattern, dnsNameRule).max(dnsNameMaxLength);

export const metadata = z.object({
  name: dnsName,
  namespace: dnsName.optional(),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
}).strict();

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

export const intOrPercent = z.union([z.number().int().min(0, 'must be >= 0'), z.string().regex(/^\d+%$/, 'must be a number or a percentage like 25%')]);

/** v1beta1 object reference. */
export const refV1beta1 = z.object({ apiVersion: z.string(), kind: z.string(), name: dnsName, namespace: dnsName.optional() }).strict();
/** v1beta2 contract reference. */
export const refV1beta2 = z.object({ apiGroup: z.string(), kind: z.string(), name: dnsName }).strict();

export interface Ref {
  group: string;
  kind: string;
  name: string;
  namespace?: string;
}

export const fromV1beta1Ref = (r: z.infer<typeof refV1beta1>): Ref => ({ group: r.apiVersion.split('/')[0]!, kind: r.kind, name: r.name, namespace: r.namespace });
export const fromV1beta2Ref = (r: z.infer<typeof refV1beta2>): Ref => ({ group: r.apiGroup, kind: r.kind, name: r.name });

export const taint = z.object({ key: z.string(), value: z.string().optional(), effect: z.enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute']) }).strict();
