import { isPlainObject, type PlainObject } from './plain-object';

/** cluster-autoscaler's node-group bounds on a MachineDeployment or MachineSet. */
export const autoscalerMinSizeAnnotation = 'cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size';
export const autoscalerMaxSizeAnnotation = 'cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size';

/** An annotation that must hold an int32, as Go's strconv.ParseInt(s, 10, 32) reads one. */
export class AnnotationValueError extends Error {}

function int32(annotations: PlainObject, key: string): number {
  const text = annotations[key];
  const value = typeof text === 'string' && /^[+-]?\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isInteger(value) || value < -(2 ** 31) || value >= 2 ** 31)
    throw new AnnotationValueError(
      `metadata.annotations[${key}]: ${JSON.stringify(text)} is not a whole number of replicas: write it as one (e.g. "1") or remove it`,
    );
  return value;
}

/**
 * spec.replicas when it is not written, as Cluster API computes it: 1, unless both autoscaler annotations are
 * there, in which case a new object starts at the minimum and an existing one (an update that dropped the
 * field, handing it to the autoscaler) keeps its replicas brought within [min, max].
 */
export function defaultReplicas(annotations: unknown, oldReplicas: unknown, isUpdate: boolean): number {
  const a = isPlainObject(annotations) ? annotations : {};
  if (!(autoscalerMinSizeAnnotation in a && autoscalerMaxSizeAnnotation in a)) return 1;
  const min = int32(a, autoscalerMinSizeAnnotation);
  const max = int32(a, autoscalerMaxSizeAnnotation);
  if (!isUpdate || typeof oldReplicas !== 'number' || oldReplicas < min) return min;
  return oldReplicas > max ? max : oldReplicas;
}
