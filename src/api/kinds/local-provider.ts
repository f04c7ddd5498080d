import { z } from 'zod';
import { metadata, seconds } from './common';

/** A cluster holds at most this many failure domains: each is a name its machines carry. */
export const maxFailureDomains = 100;

/**
 * A failure domain a LocalCluster declares, as Cluster API's development provider declares its own (name, and
 * whether control-plane machines go there). Every local machine runs on this one host: a domain is a name its
 * machines carry and spread by, not a separate fault boundary.
 */
const failureDomain = z
  .object({
    name: z
      .string()
      .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'must be a DNS-style name, e.g. fd1')
      .max(63),
    controlPlane: z.boolean().optional(),
  })
  .strict();

const localClusterSpec = z
  .object({
    failureDomains: z
      .array(failureDomain)
      .max(maxFailureDomains)
      .superRefine((domains, ctx) => {
        domains.forEach((d, i) => {
          if (domains.findIndex((o) => o.name === d.name) !== i)
            ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `failure domain ${d.name} is declared twice` });
        });
      })
      .optional(),
  })
  .strict();

/** The local provider's infrastructure kinds (infrastructure.cluster.x-k8s.io, v1beta1 and v1beta2 alike). */
export const localCluster = z
  .object({ apiVersion: z.string(), kind: z.literal('LocalCluster'), metadata, spec: localClusterSpec.optional() })
  .strict()
  .transform((d) => ({
    ...(d.spec?.failureDomains?.length
      ? { failureDomains: d.spec.failureDomains.map((f) => ({ name: f.name, controlPlane: f.controlPlane ?? false })) }
      : {}),
  }));

/**
 * A ClusterClass's infrastructure cluster: the LocalCluster each Cluster of the class is cloned from. capt reads it
 * through the Cluster's topology (the LocalCluster made of it is checked as written ones are); the management
 * API's CRD takes this schema.
 */
export const localClusterTemplate = z
  .object({
    apiVersion: z.string(),
    kind: z.literal('LocalClusterTemplate'),
    metadata,
    spec: z.object({ template: z.object({ spec: localClusterSpec.optional() }).strict() }).strict(),
  })
  .strict();

const localMachineSpec = z
  .object({ bootDelaySeconds: seconds.optional(), failBootstrap: z.boolean().optional() })
  .strict();

/** A standalone Machine's infrastructure: one local machine, its knobs as a template's. */
export const localMachine = z
  .object({ apiVersion: z.string(), kind: z.literal('LocalMachine'), metadata, spec: localMachineSpec.prefault({}) })
  .strict()
  .transform((d) => d.spec as Record<string, unknown>);

export const localMachineTemplate = z
  .object({
    apiVersion: z.string(),
    kind: z.literal('LocalMachineTemplate'),
    metadata,
    // Every knob has a default, so an empty template is a plain local machine.
    spec: z
      .object({
        template: z
          .object({ spec: localMachineSpec.prefault({}) })
          .strict()
          .prefault({}),
      })
      .strict()
      .prefault({}),
  })
  .strict()
  .transform((d) => d.spec.template.spec as Record<string, unknown>);
