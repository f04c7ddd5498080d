import { createHash } from 'node:crypto';
import { deleteMachineAnnotation } from '../contract/machine';
import type { ClusterView } from '../contract/cluster';
import type { AnnotationChange } from '../client/machine-annotations';
import { bookkeeping } from './cluster-documents';
import type { ApiObject } from './management-client';

/**
 * A Machine object the bridge made shows its machine's annotations, and an operator (or cluster-autoscaler)
 * changes them there with `kubectl annotate`. This annotation holds a digest of the annotations the bridge last
 * wrote: when the object's differ from it, someone else changed them, and the change goes to the machine.
 */
export const mirroredAnnotationsAnnotation = 'capt.cluster.x-k8s.io/mirrored-annotations';

/** The annotations on an object that are the machine's own, not a tool's bookkeeping. */
export const ownAnnotations = (o: ApiObject): Record<string, string> =>
  Object.fromEntries(Object.entries(o.metadata.annotations ?? {}).filter(([k]) => !bookkeeping(k)));

export const annotationsDigest = (annotations: Record<string, string>) =>
  createHash('sha256')
    .update(JSON.stringify(Object.entries(annotations).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))))
    .digest('hex')
    .slice(0, 32);

/** True when someone other than the bridge changed the object's annotations since the bridge wrote them. */
export function annotationsEdited(o: ApiObject): boolean {
  const mirrored = o.metadata.annotations?.[mirroredAnnotationsAnnotation];
  return mirrored !== undefined && mirrored !== annotationsDigest(ownAnnotations(o));
}

/** What makes the machine's annotations the object's: the last writer wins, as between two kubectl users. */
export function annotationChange(machine: Record<string, string>, object: Record<string, string>): AnnotationChange {
  return {
    set: Object.fromEntries(Object.entries(object).filter(([k, v]) => machine[k] !== v)),
    remove: Object.keys(machine).filter((k) => !(k in object)),
  };
}

export const asksDeletionFirst = (o: ApiObject) => deleteMachineAnnotation in (o.metadata.annotations ?? {});

/**
 * Machines whose object asks for deletion first (`cluster.x-k8s.io/delete-machine`) while their owner's record
 * does not show it yet. A scale-down applied before the mark reaches the owner could take another machine, so
 * the bridge holds the cluster's change until this is empty (cluster-autoscaler annotates, then scales).
 */
export function marksInFlight(machineObjects: ApiObject[], view: ClusterView): string[] {
  const records = [...(view.controlPlane ? [view.controlPlane] : []), ...view.machineDeployments].flatMap(
    (owner) => owner.machines,
  );
  return machineObjects
    .filter(asksDeletionFirst)
    .map((o) => o.metadata.name)
    .filter((name) => records.some((r) => r.name === name && !r.marked && !r.deleting));
}
