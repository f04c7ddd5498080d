import { z } from 'zod';
import { labels, metadata } from './common';
import { resourceSetSecretType } from '../../contract/resource-set';

/** Schemas of the addons group's ClusterResourceSet and of the ConfigMaps and Secrets it applies. */

const labelSelector = z
  .object({
    matchLabels: labels.optional(),
    matchExpressions: z
      .array(
        z
          .object({
            key: z.string().min(1),
            operator: z.enum(['In', 'NotIn', 'Exists', 'DoesNotExist']),
            values: z.array(z.string()).optional(),
          })
          .strict()
          .superRefine((e, ctx) => {
            const takesValues = e.operator === 'In' || e.operator === 'NotIn';
            if (takesValues && !e.values?.length)
              ctx.addIssue({ code: 'custom', path: ['values'], message: `operator ${e.operator} needs values` });
            if (!takesValues && e.values?.length)
              ctx.addIssue({ code: 'custom', path: ['values'], message: `operator ${e.operator} takes no values` });
          }),
      )
      .optional(),
  })
  .strict()
  .refine((s) => Object.keys(s.matchLabels ?? {}).length || s.matchExpressions?.length, {
    message: 'selector must not be empty: Cluster API selects no cluster with it',
  });

const resourceRef = z.object({ name: z.string().min(1).max(253), kind: z.enum(['ConfigMap', 'Secret']) }).strict();

/** v1beta2 requires at least one resource; v1beta1 does not. Both take at most 100, as Cluster API's CRDs. */
const clusterResourceSet = <R extends z.ZodType<z.infer<typeof resourceRef>[] | undefined>>(resources: R) =>
  z
    .object({
      apiVersion: z.string(),
      kind: z.literal('ClusterResourceSet'),
      metadata,
      spec: z
        .object({
          clusterSelector: labelSelector,
          resources,
          strategy: z.enum(['ApplyOnce', 'Reconcile']).optional(),
        })
        .strict(),
      // What `kubectl get -o yaml` shows; capt writes its own.
      status: z.unknown().optional(),
    })
    .strict();

export const clusterResourceSetV1beta2 = clusterResourceSet(z.array(resourceRef).min(1).max(100));
export const clusterResourceSetV1beta1 = clusterResourceSet(z.array(resourceRef).max(100).optional());
export type ClusterResourceSetDoc = z.infer<typeof clusterResourceSetV1beta1>;

/** Values are manifests. Cluster API reads no `binaryData`, so capt refuses any (its e2e data writes an empty one). */
export const configMap = z
  .object({
    apiVersion: z.literal('v1'),
    kind: z.literal('ConfigMap'),
    metadata,
    data: z.record(z.string(), z.string()),
    binaryData: z
      .record(z.string(), z.string())
      .nullish()
      .refine((b) => !b || !Object.keys(b).length, {
        message:
          'binaryData is never applied by a ClusterResourceSet (Cluster API reads data only); move the manifests to data',
      }),
    immutable: z.boolean().optional(),
  })
  .strict();

/** `stringData` is merged over `data` as the apiserver does; the type is the one Cluster API's ClusterResourceSet takes. */
export const secret = z
  .object({
    apiVersion: z.literal('v1'),
    kind: z.literal('Secret'),
    metadata,
    type: z.literal(resourceSetSecretType, {
      error: `a Secret a ClusterResourceSet applies must have type ${resourceSetSecretType}`,
    }),
    data: z.record(z.string(), z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64')).optional(),
    stringData: z.record(z.string(), z.string()).optional(),
    immutable: z.boolean().optional(),
  })
  .strict()
  .refine((s) => Object.keys(s.data ?? {}).length || Object.keys(s.stringData ?? {}).length, {
    message: 'the Secret has no data: a ClusterResourceSet reads its objects from data (or stringData)',
  });
export type ConfigMapDoc = z.infer<typeof configMap>;
export type SecretDoc = z.infer<typeof secret>;
