import { z } from 'zod';
import { machineMaxAgeAnnotation } from '../../contract/machine-max-age';
import { duration } from './common';

/** An object that may carry the machine-max-age annotation (a MachineDeployment or a KubeadmControlPlane). */
type Annotated = { metadata: { annotations?: Record<string, string> } };

const machineMaxAge = (d: Annotated) => {
  const value = d.metadata.annotations?.[machineMaxAgeAnnotation];
  return value === undefined ? undefined : duration.safeParse(value);
};

/** Refuses a machine-max-age that is not a duration, where it is written. */
export function machineMaxAgeParses(d: Annotated, ctx: z.RefinementCtx): void {
  const parsed = machineMaxAge(d);
  if (parsed && !parsed.success)
    ctx.addIssue({
      code: 'custom',
      path: ['metadata', 'annotations', machineMaxAgeAnnotation],
      message: `${parsed.error.issues[0]!.message}: the age after which a machine is replaced, e.g. 720h`,
    });
}

/** The model's field for it: absent when the object has no such annotation, so older specs compare equal. */
export const machineMaxAgeField = (d: Annotated) => {
  const parsed = machineMaxAge(d);
  return parsed?.success ? { machineMaxAgeSeconds: parsed.data } : {};
};
