import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { clusterApiConfig } from '../tools';
import { forEachBounded } from '../util/bounded-parallel';
import { objectPath, type ManagementApi } from './api-client';
import { providerCrds, storageVersionOnly, type Json } from './capi-crds';
import { localProviderCrds } from './provider-crds';
import { tenantClusterRoles } from './tenant-roles';

/** The field manager capt's writes of its CRDs and roles are recorded under. */
export const crdFieldManager = 'capt';

/** Cluster API's providers capt serves the kinds of: core, the kubeadm bootstrap and the kubeadm control plane. */
const capiProviders = ['core', 'bootstrap-kubeadm', 'controlplane-kubeadm'] as const;

/**
 * Every CRD capt serves: Cluster API's at the release setup copied (v1beta2 only until capt serves the
 * conversion webhook) and capt's provider kinds.
 */
export async function managementCrds(): Promise<Json[]> {
  const { config } = clusterApiConfig();
  const upstream = await Promise.all(capiProviders.map((p) => providerCrds(`${config}/${p}`)));
  return [...upstream.flat().map(storageVersionOnly), ...localProviderCrds()];
}

const nameOf = (object: Json) => (object.metadata as { name: string }).name;

/** A client builds its view from discovery, so a CRD is usable only once it is Established. */
export async function waitForEstablished(api: ManagementApi, names: string[], timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (const name of names) {
    for (;;) {
      const crd = await api.get(
        objectPath({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', name }),
      );
      const conditions =
        (crd?.status as { conditions?: { type: string; status: string }[] } | undefined)?.conditions ?? [];
      if (conditions.some((c) => c.type === 'Established' && c.status === 'True')) break;
      if (Date.now() > deadline) throw new Error(`CRD ${name} not Established within ${timeoutMs / 1000} s`);
      await sleep(100);
    }
  }
}

/** Each CRD carries the digest of what capt applied, so an unchanged one is not sent again. */
const digestAnnotation = 'capt.cluster.x-k8s.io/crd-sha256';

const withDigest = (crd: Json): Json => {
  const metadata = crd.metadata as Json & { annotations?: Record<string, string> };
  const digest = createHash('sha256').update(JSON.stringify(crd)).digest('hex');
  return { ...crd, metadata: { ...metadata, annotations: { ...metadata.annotations, [digestAnnotation]: digest } } };
};

/**
 * Creates or updates every CRD capt serves (server-side apply, so it can be repeated), four at a time, and waits until those it
 * wrote are Established; then applies the tenant ClusterRoles over their kinds. Applying the 21 CRDs (5 MB)
 * takes seconds, so those whose digest is current are skipped; the two roles are small and always applied.
 */
export async function installCrdsAndRoles(
  api: ManagementApi,
): Promise<{ crds: number; applied: number; roles: string[] }> {
  const served = await managementCrds();
  const crds = served.map(withDigest);
  const live = new Map(
    (await api.listMetadata('/apis/apiextensions.k8s.io/v1/customresourcedefinitions')).map((m) => [
      m.name,
      m.annotations?.[digestAnnotation],
    ]),
  );
  const digestOf = (crd: Json) =>
    (crd.metadata as { annotations: Record<string, string> }).annotations[digestAnnotation];
  const stale = crds.filter((crd) => live.get(nameOf(crd)) !== digestOf(crd));
  // A few at a time: 5 MB at once timed out etcd on a loaded host.
  await forEachBounded(stale, 4, async (crd) => void (await api.apply(crd, crdFieldManager)));
  await waitForEstablished(api, stale.map(nameOf));
  const roles = tenantClusterRoles(served);
  await Promise.all(roles.map((role) => api.apply(role, crdFieldManager)));
  return { crds: crds.length, applied: stale.length, roles: roles.map(nameOf) };
}
