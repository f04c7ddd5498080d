import { defaultCluster } from './cluster-defaults';
import { defaultControlPlane } from './control-plane-defaults';
import { defaultHealthCheck } from './health-check-defaults';
import { defaultMachine } from './machine-defaults';
import { defaultMachineDeployment } from './machine-deployment-defaults';
import { defaultMachineSet } from './machine-set-defaults';
import type { Defaulting, PlainObject } from './plain-object';

/**
 * Cluster API's defaulting webhooks (v1.14, v1beta2 objects), kind by kind, for the kinds capt takes that
 * have one. KubeadmConfig(Template) has none that applies: its webhook defaults only a topology's dry runs.
 */
export const defaultings = {
  Cluster: defaultCluster,
  MachineDeployment: defaultMachineDeployment,
  MachineSet: defaultMachineSet,
  Machine: defaultMachine,
  MachineHealthCheck: defaultHealthCheck,
  KubeadmControlPlane: defaultControlPlane,
} as const satisfies Record<string, Defaulting>;
export type DefaultedKind = keyof typeof defaultings;

export const isDefaultedKind = (kind: string): kind is DefaultedKind => Object.hasOwn(defaultings, kind);

/**
 * `object` with Cluster API's defaults, `object` itself untouched (`old`: the stored object of an update). A
 * field the user wrote is kept, but for the cluster-name labels (always `spec.clusterName`) and a version
 * written without its "v", as Cluster API does. Throws AnnotationValueError for an autoscaler bound that is
 * not a number.
 */
export function withDefaults(object: PlainObject, old?: PlainObject): PlainObject {
  const kind = String(object.kind);
  if (!isDefaultedKind(kind)) return object;
  const copy = structuredClone(object);
  defaultings[kind](copy, old);
  return copy;
}
