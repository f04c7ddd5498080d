import { z } from 'zod';
import { metadata, seconds } from './common';

/** The local provider's infrastructure kinds (infrastructure.cluster.x-k8s.io, v1beta1 and v1beta2 alike). */
export const localCluster = z
  .object({ apiVersion: z.string(), kind: z.literal('LocalCluster'), metadata, spec: z.object({}).strict().optional() })
  .strict()
  .transform(() => ({}));

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
