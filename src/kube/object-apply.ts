import { ApiException, KubernetesObjectApi, PatchStrategy, type KubernetesObject } from '@kubernetes/client-node';
import { kubeApiConfiguration } from './kube-client';

/** The field manager of what capt applies with server-side apply: `kubectl get -o yaml --show-managed-fields` names it. */
export const addonFieldManager = 'capt-clusterresourceset';

/** One object's outcome: done, or refused by the apiserver (its words), which no retry of the same request mends. */
export type ObjectOutcome = { ok: true } | { ok: false; message: string };

/**
 * Writes objects of any kind to a cluster. `create` makes an object and leaves one that exists as it is
 * (Cluster API's ApplyOnce); `apply` makes or updates it by server-side apply, owning the fields it wrote, so
 * a field dropped from the manifest is dropped from the object (its Reconcile). A namespaced object without a
 * namespace goes to `default`. Errors an apiserver answers for the request itself (4xx but 429) are outcomes;
 * others (unreachable, 5xx, 429) are thrown, for the caller to retry.
 */
export class ObjectWriter {
  private readonly api: KubernetesObjectApi;

  constructor(kubeconfig: string) {
    this.api = new KubernetesObjectApi(kubeApiConfiguration(kubeconfig).configuration);
  }

  async write(object: KubernetesObject, mode: 'create' | 'apply'): Promise<ObjectOutcome> {
    // client-node sets a default namespace on the object it is given: give it a copy.
    const copy = structuredClone(object);
    try {
      if (mode === 'create') await this.api.create(copy, undefined, undefined, addonFieldManager);
      else await this.api.patch(copy, undefined, undefined, addonFieldManager, true, PatchStrategy.ServerSideApply);
      return { ok: true };
    } catch (err) {
      if (err instanceof ApiException) {
        if (mode === 'create' && err.code === 409) return { ok: true };
        if (err.code >= 400 && err.code < 500 && err.code !== 429)
          return { ok: false, message: statusMessage(err) ?? notServed(object, err.code) };
      }
      // A kind the cluster does not serve (a CRD not installed yet) is found out before any request.
      if (err instanceof Error && /Unrecognized API version and kind/.test(err.message))
        return { ok: false, message: err.message };
      throw err;
    }
  }
}

/** The apiserver's own words, when its answer has them. */
function statusMessage(err: ApiException<unknown>): string | undefined {
  try {
    return ((typeof err.body === 'string' ? JSON.parse(err.body) : err.body) as { message?: string }).message;
  } catch {
    return undefined;
  }
}

/** A bare 404 is discovery's: the cluster serves no such kind (a CustomResourceDefinition not installed yet). */
const notServed = (o: KubernetesObject, code: number) =>
  code === 404
    ? `the cluster serves no ${o.kind} in ${o.apiVersion} (HTTP 404): install its CustomResourceDefinition first, in an earlier resource of the set or another set`
    : `HTTP ${code}`;
