import { setTimeout as sleep } from 'node:timers/promises';
import type { ManagementApi } from '../management-api/api-client';
import { waitForEstablished } from '../management-api/crd-install';
import { convertedKinds } from '../conversion/convert';

/** The path of the conversion webhook on the bridge's webhook server. */
export const conversionPath = '/convert';

/**
 * The field manager of the CRDs' conversion (the bridge's, and init's with --webhook-url): `capt dev start` and
 * `capt init` apply the CRDs as `capt` (v1beta1 unserved, no conversion) and skip CRDs whose digest is current,
 * so they do not undo this.
 */
export const conversionFieldManager = 'capt-bridge-conversion';

interface CrdVersion {
  name: string;
  served: boolean;
  storage: boolean;
}

export interface Crd {
  metadata: { name: string };
  spec: { group: string; names: { kind: string; plural: string }; versions: CrdVersion[] };
}

/** The live CRDs of the kinds capt converts (read one by one: a list of every CRD is megabytes). */
export async function convertedCrds(api: ManagementApi): Promise<Crd[]> {
  const crdsPath = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
  const groups = Object.keys(convertedKinds);
  const names = (await api.listMetadata(crdsPath))
    .map((m) => m.name)
    .filter((name) => groups.some((group) => name.endsWith(`.${group}`)));
  const crds = await Promise.all(names.map((name) => api.get(`${crdsPath}/${name}`)));
  return (crds as unknown as (Crd | undefined)[]).filter((crd): crd is Crd =>
    Boolean(crd && convertedKinds[crd.spec.group]?.[crd.spec.names.kind]),
  );
}

/**
 * Until v1beta1 is served (discovery catches up with a CRD update a moment later), listing once through the
 * webhook: with objects stored, each list is converted by it.
 */
export async function waitForV1beta1(api: ManagementApi, crds: Crd[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (const { spec } of crds) {
    const path = `/apis/${spec.group}/v1beta1/${spec.names.plural}?limit=1`;
    while (!(await api.get(path).catch(() => undefined))) {
      if (Date.now() > deadline)
        throw new Error(
          `${spec.names.plural}.${spec.group} v1beta1 not served within ${timeoutMs / 1000} s of the conversion webhook's registration`,
        );
      await sleep(200);
    }
  }
}

/**
 * Has the CRDs of the kinds capt converts serve v1beta1 too, converted by the webhook at `url` (whose serving
 * certificate `caBundle` signed): server-side apply of their versions and `spec.conversion` under capt's bridge
 * field manager, then until they are Established again. The storage version stays v1beta2. Until a webhook
 * answers there, v1beta1 requests fail, and v1beta2 (stored as is) needs no conversion. Returns their names.
 */
export async function pointConversionAt(api: ManagementApi, url: string, caBundle: string): Promise<string[]> {
  const crds = await convertedCrds(api);
  const conversion = {
    strategy: 'Webhook',
    webhook: {
      conversionReviewVersions: ['v1'],
      clientConfig: { url, caBundle: Buffer.from(caBundle).toString('base64') },
    },
  };
  // The versions list is atomic in server-side apply: it is sent whole, as the CRD has it, with v1beta1 served.
  const served = (v: CrdVersion) => (v.name === 'v1beta1' ? { ...v, served: true } : v);
  await Promise.all(
    crds.map(({ metadata, spec }) =>
      api.apply(
        {
          apiVersion: 'apiextensions.k8s.io/v1',
          kind: 'CustomResourceDefinition',
          metadata: { name: metadata.name },
          spec: { versions: spec.versions.map(served), conversion },
        },
        conversionFieldManager,
      ),
    ),
  );
  const names = crds.map((crd) => crd.metadata.name).sort();
  await waitForEstablished(api, names);
  return names;
}
