import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';

/**
 * Cluster API's CRDs as its kustomizations make them from a provider's config folder (crd/ and
 * default/kustomization.yaml): labelled with the provider's labels (the contract labels tell core which API
 * version implements which contract), each with the conversion webhook upstream patches in, if any.
 */

export type Json = Record<string, unknown>;

export interface Kustomization {
  namespace?: string;
  namePrefix?: string;
  resources?: string[];
  labels?: { pairs: Record<string, string> }[];
  patches?: { path: string }[];
}

export async function readYaml<T>(path: string): Promise<T> {
  return parse(await readFile(path, 'utf8')) as T;
}

export async function readDocuments(path: string): Promise<Json[]> {
  return parseAllDocuments(await readFile(path, 'utf8'))
    .map((d) => d.toJSON() as Json)
    .filter(Boolean);
}

const labelsOf = (k: Kustomization) =>
  Object.assign({}, ...(k.labels ?? []).map((l) => l.pairs)) as Record<string, string>;

/** The conversion webhook a CRD patch names: its review versions and the path on the provider's webhook server. */
export interface ConversionWebhook {
  conversionReviewVersions: string[];
  path: string;
}

export interface ProviderCrd {
  crd: Json;
  /** Set when upstream converts this CRD's versions through the provider's webhook. */
  conversion?: ConversionWebhook;
}

/** The labelled CRDs of one provider's config folder, in its kustomization's order. */
export async function providerCrds(configDir: string): Promise<ProviderCrd[]> {
  const crdDir = join(configDir, 'crd');
  const kustomization = await readYaml<Kustomization>(join(crdDir, 'kustomization.yaml'));
  const defaults = await readYaml<Kustomization>(join(configDir, 'default/kustomization.yaml'));
  const labels = { ...labelsOf(defaults), ...labelsOf(kustomization) };
  // A patch names its CRD and sets spec.conversion; only its review versions and path are kept.
  const conversions = new Map<string, ConversionWebhook>();
  for (const { path } of kustomization.patches ?? []) {
    const patch = await readYaml<{
      metadata: { name: string };
      spec?: {
        conversion?: { webhook?: { conversionReviewVersions: string[]; clientConfig: { service: { path: string } } } };
      };
    }>(join(crdDir, path));
    const webhook = patch.spec?.conversion?.webhook;
    if (webhook)
      conversions.set(patch.metadata.name, {
        conversionReviewVersions: webhook.conversionReviewVersions,
        path: webhook.clientConfig.service.path,
      });
  }
  const out: ProviderCrd[] = [];
  for (const resource of kustomization.resources ?? []) {
    for (const crd of await readDocuments(join(crdDir, resource))) {
      const metadata = crd.metadata as { name: string; labels?: Record<string, string> };
      metadata.labels = { ...metadata.labels, ...labels };
      out.push({ crd, conversion: conversions.get(metadata.name) });
    }
  }
  return out;
}

interface CrdVersion {
  name: string;
  served: boolean;
  storage: boolean;
}

/**
 * The CRD with only its storage version served and no conversion: what capt serves until it serves Cluster
 * API's conversion webhook. The other versions stay listed (unserved), so objects stored in them are still
 * accounted for; a CRD without a conversion webhook upstream is left as it is.
 */
export function storageVersionOnly({ crd, conversion }: ProviderCrd): Json {
  if (!conversion) return crd;
  const spec = crd.spec as { versions: CrdVersion[] };
  return {
    ...crd,
    spec: {
      ...spec,
      versions: spec.versions.map((v) => ({ ...v, served: v.storage })),
      conversion: { strategy: 'None' },
    },
  };
}
