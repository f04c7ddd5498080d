import type { Logger } from 'pino';
import { AnnotationValueError } from '../defaulting/replicas-default';
import { isDefaultedKind, withDefaults } from '../defaulting/defaults';
import { jsonPatch, type PatchOperation } from '../defaulting/json-patch';
import type { PlainObject } from '../defaulting/plain-object';
import {
  admissionResponse,
  defaultingResponse,
  objectNamed,
  parseAdmissionReview,
  type AdmissionRequest,
} from './admission-review';
import type { WebhookRoute } from './admission-webhook';
import { madeByController, madeFromTopology } from './cluster-documents';

/** Where the apiserver posts the reviews of the defaulting (mutating) webhook. */
export const mutatePath = '/mutate';

/**
 * Cluster API's defaults for the request's object, as JSON Patch operations (none: nothing to add), or a
 * refusal when they cannot be computed. An object on its way out is left as it is (only its finalizers
 * change), and so is a Machine the bridge made for a MachineSet or control plane: the bridge writes it whole
 * from its workflow, and a default there (a Node deletion timeout) would show a value the machine does not use.
 * An object made of a topology is written as Cluster API's topology code rendered it, defaults included.
 */
export function defaultingPatch(request: AdmissionRequest): { patch: PatchOperation[]; refusal?: string } {
  const { operation, object, oldObject } = request;
  if ((operation !== 'CREATE' && operation !== 'UPDATE') || !object || !isDefaultedKind(object.kind))
    return { patch: [] };
  if (object.metadata.deletionTimestamp || madeByController(object) || madeFromTopology(object)) return { patch: [] };
  try {
    const old = operation === 'UPDATE' ? (oldObject as PlainObject | undefined) : undefined;
    return { patch: jsonPatch(object, withDefaults(object as unknown as PlainObject, old)) };
  } catch (err) {
    if (!(err instanceof AnnotationValueError)) throw err;
    const { namespace, name } = object.metadata;
    return { patch: [], refusal: `${object.kind} ${namespace}/${name} at ${err.message}` };
  }
}

/** The defaulting webhook: allowed with Cluster API's defaults as a JSON Patch, or refused when they cannot be computed. */
export const defaultingRoute =
  (log: Logger): WebhookRoute =>
  async (body) => {
    const request = parseAdmissionReview(body);
    const { patch, refusal } = defaultingPatch(request);
    if (refusal) log.info({ uid: request.uid, object: objectNamed(request) }, 'defaulting: refused');
    return refusal ? admissionResponse(request.uid, refusal) : defaultingResponse(request.uid, patch);
  };
