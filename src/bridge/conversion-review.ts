import { ConversionError, convertObject, type ConversionSchemas } from '../conversion/convert';
import {
  ClusterApiConversionError,
  convertedByClusterApi,
  convertWithClusterApi,
} from '../conversion/cluster-api-conversion';
import { MalformedReviewError, reviewRequest } from './admission-review';
import type { WebhookRoute } from './admission-webhook';

/**
 * Kubernetes' ConversionReview (apiextensions.k8s.io/v1) as a conversion webhook reads and answers it. A body
 * that is not one is a MalformedReviewError (HTTP 400); an object capt cannot convert fails the review with a
 * message the apiserver passes on to the client.
 */

export const conversionReviewVersion = 'apiextensions.k8s.io/v1';

/** At most this many objects in one review (a list of 500 is the apiserver's default chunk). */
export const maxConvertedObjects = 10_000;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export interface ConversionRequest {
  uid: string;
  desiredAPIVersion: string;
  objects: Record<string, unknown>[];
}

export function parseConversionReview(body: string): ConversionRequest {
  const request = reviewRequest(body, conversionReviewVersion, 'ConversionReview');
  if (typeof request.desiredAPIVersion !== 'string' || !request.desiredAPIVersion)
    throw new MalformedReviewError('request.desiredAPIVersion is missing');
  const objects = request.objects;
  if (!Array.isArray(objects) || !objects.every(isRecord))
    throw new MalformedReviewError('request.objects must be a list of objects');
  if (objects.length > maxConvertedObjects)
    throw new MalformedReviewError(`request.objects has ${objects.length} objects, more than ${maxConvertedObjects}`);
  return { uid: request.uid, desiredAPIVersion: request.desiredAPIVersion, objects };
}

/** The ConversionReview answering `request` with `response` (its uid added). */
const reviewAnswer = (request: ConversionRequest, response: Record<string, unknown>) => ({
  apiVersion: conversionReviewVersion,
  kind: 'ConversionReview',
  response: { uid: request.uid, ...response },
});
const failure = (request: ConversionRequest, message: string) =>
  reviewAnswer(request, { convertedObjects: [], result: { status: 'Failure', message } });

/** The ConversionReview answering `request`: every object converted, or the first that cannot be, named. */
export function conversionResponse(request: ConversionRequest, schemas: ConversionSchemas) {
  try {
    const convertedObjects = request.objects.map((object, i) => {
      try {
        return convertObject(object, request.desiredAPIVersion, schemas);
      } catch (err) {
        if (!(err instanceof ConversionError)) throw err;
        const metadata = isRecord(object.metadata) ? object.metadata : {};
        const name = `${String(object.kind)} ${String(metadata.namespace)}/${String(metadata.name)}`;
        throw new ConversionError(`request.objects[${i}] (${name}): ${err.message}`);
      }
    });
    return reviewAnswer(request, { convertedObjects, result: { status: 'Success' } });
  } catch (err) {
    if (!(err instanceof ConversionError)) throw err;
    return failure(request, err.message);
  }
}

/** The same, for a kind capt hands to Cluster API's own converters (cluster-api-conversion.ts). */
async function clusterApiConversionResponse(request: ConversionRequest) {
  try {
    const convertedObjects = await convertWithClusterApi(request.objects, request.desiredAPIVersion);
    return reviewAnswer(request, { convertedObjects, result: { status: 'Success' } });
  } catch (err) {
    if (!(err instanceof ClusterApiConversionError)) throw err;
    return failure(request, err.message);
  }
}

/**
 * The conversion webhook's route on the bridge's webhook server: the kinds capt runs converted with `schemas` (the
 * live CRDs'), the others by Cluster API's converters. A review is of one CRD's objects, so its first names the kind.
 */
export const conversionRoute =
  (schemas: ConversionSchemas): WebhookRoute =>
  async (body) => {
    const request = parseConversionReview(body);
    const kind = request.objects[0]?.kind;
    const group = request.desiredAPIVersion.split('/')[0]!;
    return typeof kind === 'string' && convertedByClusterApi(group, kind)
      ? clusterApiConversionResponse(request)
      : conversionResponse(request, schemas);
  };
