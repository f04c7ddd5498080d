import { join } from 'node:path';
import {
  providerCrds,
  readDocuments,
  readYaml,
  type Json,
  type Kustomization,
} from '../../src/management-api/capi-crds';
import { managerNames, type CapiModules, type ManagerName } from './capi-modules';

/**
 * What Cluster API's kustomizations (and cert-manager, in a real install) would make of each provider's
 * config folder, generated from the Go module cache: the CRDs (src/management-api/capi-crds.ts) with their
 * conversion webhooks, the admission webhook configurations, and the managers' arguments. Services and
 * certificates are replaced by a URL on 127.0.0.1 and one CA bundle, since the managers run as processes, not pods.
 */

/** Each manager's webhook server: 9443 + its index, as the issue's hand run had them. */
export const webhookPort = (m: ManagerName) => 9443 + managerNames.indexOf(m);

const webhookUrl = (m: ManagerName, path: string) => `https://127.0.0.1:${webhookPort(m)}${path}`;

/** The CRDs of one manager, with conversion through that manager's webhook where upstream patches it in. */
async function crds(m: ManagerName, configDir: string, caBundle: string): Promise<Json[]> {
  return (await providerCrds(configDir)).map(({ crd, conversion }) => {
    if (conversion)
      (crd.spec as Json).conversion = {
        strategy: 'Webhook',
        webhook: {
          conversionReviewVersions: conversion.conversionReviewVersions,
          clientConfig: { url: webhookUrl(m, conversion.path), caBundle },
        },
      };
    return crd;
  });
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
 * at its value in `variables` or else its default, as clusterctl init substitutes them (CLUSTER_TOPOLOGY=true
 * turns the ClusterClass feature on). Leader election is dropped (one replica each); the addresses are set by
 * the harness.
 */
export async function upstreamManagerArgs(
  configDir: string,
  variables: Record<string, string> = {},
): Promise<string[]> {
  const deployment = (await readDocuments(join(configDir, 'manager/manager.yaml'))).find(
    (d) => d.kind === 'Deployment',
  );
  const containers = (
    deployment?.spec as { template: { spec: { containers: { name: string; args?: string[] }[] } } } | undefined
  )?.template.spec.containers;
  const args = containers?.find((c) => c.name === 'manager')?.args;
  if (!args) throw new Error(`no manager container args in ${join(configDir, 'manager/manager.yaml')}`);
  const expanded = args.map((a) =>
    a.replace(/\$\{([A-Z0-9_]+):=([^}]*)\}/g, (_, name: string, value: string) => variables[name] ?? value),
  );
  const unresolved = expanded.find((a) => a.includes('${'));
  if (unresolved) throw new Error(`manager argument ${unresolved} has a variable without a default`);
  const dropped = ['--leader-elect', '--diagnostics-address', '--insecure-diagnostics'];
  return expanded.filter((a) => !dropped.includes(a.split('=')[0]!));
}
