import { setTimeout as sleep } from 'node:timers/promises';
import type { ManagementApi } from '../management-api/api-client';
import { waitForEstablished } from '../management-api/crd-install';
import { convertedKinds } from '../conversion/convert';
import { clusterApiConvertedKinds, convertedByClusterApi } from '../conversion/cluster-api-conversion';

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

/** The kinds the conversion webhook converts: its own (convert.ts) and those it hands to Cluster API's converters. */
const converted = (group: string, kind: string) =>
  Boolean(convertedKinds[group]?.[kind]) || convertedByClusterApi(group, kind);

/** The live CRDs of the kinds capt converts (read one by one: a list of every CRD is megabytes). */
export async function convertedCrds(api: ManagementApi): Promise<Crd[]> {
  const crdsPath = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
  const groups = [...new Set([...Object.keys(convertedKinds), ...Object.keys(clusterApiConvertedKinds)])];
  const names = (await api.listMetadata(crdsPath))
    .map((m) => m.name)
    .filter((name) => groups.some((group) => name.endsWith(`.${group}`)));
  const crds = await Promise.all(names.map((name) => api.get(`${crdsPath}/${name}`)));
  return (crds as unknown as (Crd | undefined)[]).filter((crd): crd is Crd =>
    Boolean(crd && converted(crd.spec.group, crd.spec.names.kind)),
  );
}

/**
 * Until every older version is served (discovery catches up with a CRD update a moment later), listing each once
 * through the webhook: with objects stored, each list is converted by it.
 */
export async function waitForOlderVersions(api: ManagementApi, crds: Crd[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (const { spec } of crds)
    for (const { name } of spec.versions.filter((v) => !v.storage)) {
      const path = `/apis/${spec.group}/${name}/${spec.names.plural}?limit=1`;
      while (!(await api.get(path).catch(() => undefined))) {
        if (Date.now() > deadline)
          throw new Error(
            `${spec.names.plural}.${spec.group} ${name} not served within ${timeoutMs / 1000} s of the conversion webhook's registration`,
          );
        await sleep(200);
      }
    }
}

/**
 * Has the CRDs of the kinds capt converts serve their older versions too (v1beta1; v1alpha1 of runtime and IPAM), as
 * Cluster API's do, converted by the webhook at `url` (whose serving certificate `caBundle` signed): server-side
 * apply of their versions and `spec.conversion` under capt's bridge field manager, then until they are Established
 * again. The storage version stays v1beta2. Until a webhook answers there, requests in an older version fail, and
 * v1beta2 (stored as is) needs no conversion. Returns their names.
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
  // The versions list is atomic in server-side apply: it is sent whole, as the CRD has it, every version served.
  const served = (v: CrdVersion) => ({ ...v, served: true });
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
