import { dnsNameRule, isDnsName } from '../util/checked-paths';
import type { ApiObject } from './management-client';

/**
 * Kubernetes' AdmissionReview (admission.k8s.io/v1) as a validating webhook reads and answers it: the
 * request's fields capt decides on, checked before anything trusts them, and the response.
 */

export const admissionReviewVersion = 'admission.k8s.io/v1';

export interface AdmissionRequest {
  uid: string;
  operation: 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';
  object?: ApiObject;
  oldObject?: ApiObject;
}

/** A body that is not an AdmissionReview: answered with HTTP 400 and this message. */
export class MalformedReviewError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MalformedReviewError';
  }
}

const operations = ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'] as const;
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * An object as the apiserver sends it: a kind and a name, in a namespace (every kind reviewed is namespaced).
 * The namespace becomes part of the API paths the webhook reads, so both are checked as the apiserver checks them.
 */
function apiObject(v: unknown, field: string): ApiObject | undefined {
  if (v === undefined || v === null) return undefined;
  const metadata = isRecord(v) && isRecord(v.metadata) ? v.metadata : undefined;
  if (
    !isRecord(v) ||
    typeof v.apiVersion !== 'string' ||
    typeof v.kind !== 'string' ||
    typeof metadata?.name !== 'string' ||
    typeof metadata.namespace !== 'string'
  )
    throw new MalformedReviewError(
      `request.${field} must be an object with apiVersion, kind, metadata.name and namespace`,
    );
  for (const key of ['name', 'namespace'] as const)
    if (!isDnsName(metadata[key] as string))
      throw new MalformedReviewError(`request.${field}.metadata.${key} ${dnsNameRule}`);
  return v as unknown as ApiObject;
}

/**
 * The request of a review body (an AdmissionReview, a ConversionReview): JSON of `apiVersion` and `kind` with a
 * request that has a uid. A MalformedReviewError says what is wrong with one that is not.
 */
export function reviewRequest(
  body: string,
  apiVersion: string,
  kind: string,
): Record<string, unknown> & { uid: string } {
  let review: unknown;
  try {
    review = JSON.parse(body);
  } catch (err) {
    throw new MalformedReviewError(`the body is not JSON: ${(err as Error).message}`);
  }
  if (!isRecord(review) || review.apiVersion !== apiVersion || review.kind !== kind)
    throw new MalformedReviewError(`expected ${kind === 'AdmissionReview' ? 'an' : 'a'} ${kind} of ${apiVersion}`);
  const request = review.request;
  if (!isRecord(request)) throw new MalformedReviewError(`the ${kind} has no request`);
  if (typeof request.uid !== 'string' || !request.uid) throw new MalformedReviewError('request.uid is missing');
  return request as Record<string, unknown> & { uid: string };
}

/** The request of an AdmissionReview body; a MalformedReviewError says what is wrong with one that is not. */
export function parseAdmissionReview(body: string): AdmissionRequest {
  const request = reviewRequest(body, admissionReviewVersion, 'AdmissionReview');
  const operation = operations.find((o) => o === request.operation);
  if (!operation) throw new MalformedReviewError(`request.operation must be one of ${operations.join(', ')}`);
  const object = apiObject(request.object, 'object');
  if ((operation === 'CREATE' || operation === 'UPDATE') && !object)
    throw new MalformedReviewError(`a ${operation} request carries its object in request.object`);
  return { uid: request.uid, operation, object, oldObject: apiObject(request.oldObject, 'oldObject') };
}

/** The request's object by kind and name, for logs: a refusal quotes values from the request, so it is not logged. */
export const objectNamed = (r: AdmissionRequest) =>
  `${r.object?.kind} ${r.object?.metadata.namespace}/${r.object?.metadata.name}`;

/**
 * The AdmissionReview answering `uid`: allowed, or refused with capt's message (kubectl prints it after
 * `admission webhook "NAME" denied the request: `). 422, as the apiserver answers an invalid object.
 */
export function admissionResponse(uid: string, refusal: string | undefined) {
  return {
    apiVersion: admissionReviewVersion,
    kind: 'AdmissionReview',
    response: refusal
      ? { uid, allowed: false, status: { code: 422, reason: 'Invalid', message: refusal } }
      : { uid, allowed: true },
  };
}

/** The AdmissionReview allowing `uid` with `patch` applied to its object (a JSON Patch, base64 as the API wants it). */
export function defaultingResponse(uid: string, patch: readonly object[]) {
  if (!patch.length) return admissionResponse(uid, undefined);
  return {
    apiVersion: admissionReviewVersion,
    kind: 'AdmissionReview',
    response: {
      uid,
      allowed: true,
      patchType: 'JSONPatch',
      patch: Buffer.from(JSON.stringify(patch)).toString('base64'),
    },
  };
}
