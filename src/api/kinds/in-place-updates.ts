import { z } from 'zod';
import { inPlaceUpdatesAnnotation } from '../../contract/in-place';

/** A MachineDeployment or KubeadmControlPlane, as far as its in-place opt-out goes. */
type Annotated = { metadata: { annotations?: Record<string, string> } };

/** Refuses an in-place-updates annotation other than "true" or "false", where it is written. */
export function inPlaceUpdatesParses(d: Annotated, ctx: z.RefinementCtx): void {
  const value = d.metadata.annotations?.[inPlaceUpdatesAnnotation];
  if (value !== undefined && value !== 'true' && value !== 'false')
    ctx.addIssue({
      code: 'custom',
      path: ['metadata', 'annotations', inPlaceUpdatesAnnotation],
      message: `"${value}" is not a value it takes: "false" replaces every machine on a rollout, "true" (the default) lets the provider update them in place where it can`,
    });
}

/** The model's field: present only when turned off, so specs without the annotation compare as they did. */
export const inPlaceUpdatesField = (d: Annotated) =>
  d.metadata.annotations?.[inPlaceUpdatesAnnotation] === 'false' ? { inPlaceUpdates: false as const } : {};
