import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { managerNames, type CapiModules, type ManagerName } from './capi-modules';

/**
 * What Cluster API's kustomizations (and cert-manager, in a real install) would make of each provider's
 * config folder, generated from the Go module cache: the CRDs with the providers' labels (the contract
 * labels tell core which API version implements which contract) and conversion webhooks, the admission
 * webhook configurations, and the managers' arguments. Services and certificates are replaced by a URL on
 * 127.0.0.1 and one CA bundle, since the managers run as processes, not pods.
 */

type Json = Record<string, unknown>;

interface Kustomization {
  namespace?: string;
  namePrefix?: string;
  resources?: string[];
  labels?: { pairs: Record<string, string> }[];
  patches?: { path: string }[];
}

async function readYaml<T>(path: string): Promise<T> {
  return parse(await readFile(path, 'utf8')) as T;
}

async function readDocuments(path: string): Promise<Json[]> {
  return parseAllDocuments(await readFile(path, 'utf8'))
    .map((d) => d.toJSON() as Json)
    .filter(Boolean);
}

const labelsOf = (k: Kustomization) =>
  Object.assign({}, ...(k.labels ?? []).map((l) => l.pairs)) as Record<string, string>;

/** Each manager's webhook server: 9443 + its index, as the issue's hand run had them. */
export const webhookPort = (m: ManagerName) => 9443 + managerNames.indexOf(m);

const webhookUrl = (m: ManagerName, path: string) => `https://127.0.0.1:${webhookPort(m)}${path}`;

/** The CRDs of one manager, labelled, with conversion through that manager's webhook where upstream patches it in. */
async function crds(m: ManagerName, configDir: string, caBundle: string): Promise<Json[]> {
  const crdDir = join(configDir, 'crd');
  const kustomization = await readYaml<Kustomization>(join(crdDir, 'kustomization.yaml'));
  const defaults = await readYaml<Kustomization>(join(configDir, 'default/kustomization.yaml'));
  const labels = { ...labelsOf(defaults), ...labelsOf(kustomization) };
  // A patch names its CRD and sets spec.conversion; only its review versions and path are kept.
  const conversions = new Map<string, { conversionReviewVersions: string[]; path: string }>();
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
  const out: Json[] = [];
  for (const resource of kustomization.resources ?? []) {
    for (const crd of await readDocuments(join(crdDir, resource))) {
      const metadata = crd.metadata as { name: string; labels?: Record<string, string> };
      metadata.labels = { ...metadata.labels, ...labels };
      const conversion = conversions.get(metadata.name);
      if (conversion) {
        (crd.spec as Json).conversion = {
          strategy: 'Webhook',
          webhook: {
            conversionReviewVersions: conversion.conversionReviewVersions,
            clientConfig: { url: webhookUrl(m, conversion.path), caBundle },
          },
        };
      }
      out.push(crd);
    }
  }
  return out;
}

/** The mutating and validating webhook configurations of one manager, named with its kustomize prefix as upstream installs them. */
async function webhookConfigurations(m: ManagerName, configDir: string, caBundle: string): Promise<Json[]> {
  const defaults = await readYaml<Kustomization>(join(configDir, 'default/kustomization.yaml'));
  const docs = await readDocuments(join(configDir, 'webhook/manifests.yaml'));
  for (const doc of docs) {
    const metadata = doc.metadata as { name: string };
    metadata.name = `${defaults.namePrefix ?? ''}${metadata.name}`;
    for (const hook of doc.webhooks as { clientConfig: Json & { service?: { path: string } } }[]) {
      hook.clientConfig = { url: webhookUrl(m, hook.clientConfig.service!.path), caBundle };
    }
  }
  return docs;
}

/** The namespace each manager's deployment would run in (its POD_NAMESPACE). */
export async function managerNamespace(configDir: string): Promise<string> {
  return (await readYaml<Kustomization>(join(configDir, 'default/kustomization.yaml'))).namespace ?? 'default';
}

/** Everything to apply to the management cluster before the managers start: namespaces, CRDs, webhook configurations. */
export async function managementManifests(modules: CapiModules, caCert: string): Promise<Json[]> {
  const caBundle = Buffer.from(caCert).toString('base64');
  const out: Json[] = [];
  for (const m of managerNames) {
    const dir = modules.configDirs[m];
    out.push({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: await managerNamespace(dir) } });
    out.push(...(await crds(m, dir, caBundle)), ...(await webhookConfigurations(m, dir, caBundle)));
  }
  return out;
}

/**
 * The manager's arguments from its deployment (config/manager/manager.yaml) with each `${VAR:=default}`
 * at its default, so feature gates are those a clusterctl install gets. Leader election is dropped (one
 * replica each); the addresses are set by the harness.
 */
export async function upstreamManagerArgs(configDir: string): Promise<string[]> {
  const deployment = (await readDocuments(join(configDir, 'manager/manager.yaml'))).find(
    (d) => d.kind === 'Deployment',
  );
  const containers = (
    deployment?.spec as { template: { spec: { containers: { name: string; args?: string[] }[] } } } | undefined
  )?.template.spec.containers;
  const args = containers?.find((c) => c.name === 'manager')?.args;
  if (!args) throw new Error(`no manager container args in ${join(configDir, 'manager/manager.yaml')}`);
  const expanded = args.map((a) => a.replace(/\$\{[A-Z0-9_]+:=([^}]*)\}/g, (_, value: string) => value));
  const unresolved = expanded.find((a) => a.includes('${'));
  if (unresolved) throw new Error(`manager argument ${unresolved} has a variable without a default`);
  const dropped = ['--leader-elect', '--diagnostics-address', '--insecure-diagnostics'];
  return expanded.filter((a) => !dropped.includes(a.split('=')[0]!));
}
