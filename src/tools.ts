import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { compareVersions } from './contract/upgrade-plan';

/** Paths of the external binaries that `npm run setup` (tools/setup.sh) built or unpacked. */
export interface ToolPaths {
  temporal: string;
  /** The production topology (capt dev start --persistence postgres): Temporal's server, its schema tool, its Web UI server. */
  temporalServer?: string;
  temporalSqlTool?: string;
  temporalUiServer?: string;
  /** Debian's PostgreSQL server binaries (postgres, initdb, pg_isready). */
  postgres?: string;
  etcd: string;
  /** Cluster API's kustomize config folders (core, bootstrap-kubeadm, controlplane-kubeadm), copied from its Go module. */
  clusterApi?: { version: string; config: string; clusterctl?: string; e2eDriver?: string; topologyRender?: string };
  /** Kubernetes version (vX.Y.Z) -> directory holding kube-apiserver, kube-controller-manager, kube-scheduler and kubectl. */
  kubernetes: Record<string, string>;
}

export function toolsDir(): string {
  return process.env.CAPT_TOOLS_DIR ?? join(homedir(), '.cache/capt/tools');
}

let cached: ToolPaths | undefined;

export function toolPaths(): ToolPaths {
  if (cached) return cached;
  const manifest = join(toolsDir(), 'manifest.json');
  try {
    cached = JSON.parse(readFileSync(manifest, 'utf8')) as ToolPaths;
    return cached;
  } catch {
    throw new Error(
      `capt's tools are not installed (${manifest} is missing): run \`npm run setup\` in the capt checkout first`,
    );
  }
}

export type TopologyToolPaths = Required<
  Pick<ToolPaths, 'temporalServer' | 'temporalSqlTool' | 'temporalUiServer' | 'postgres'>
>;

/** The production topology's tools; a cache set up before they were added has none of them. */
export function topologyToolPaths(): TopologyToolPaths {
  const { temporalServer, temporalSqlTool, temporalUiServer, postgres } = toolPaths();
  if (!temporalServer || !temporalSqlTool || !temporalUiServer || !postgres) {
    throw new Error(
      `the Temporal server, its schema tool, its Web UI server or PostgreSQL is missing from ${join(toolsDir(), 'manifest.json')}: run \`npm run setup\` in the capt checkout`,
    );
  }
  return { temporalServer, temporalSqlTool, temporalUiServer, postgres };
}

/** Cluster API's release and config folders; a cache set up before they were added has none. */
export function clusterApiConfig(): NonNullable<ToolPaths['clusterApi']> {
  const { clusterApi } = toolPaths();
  if (!clusterApi)
    throw new Error(
      `Cluster API's CRDs are missing from ${join(toolsDir(), 'manifest.json')}: run \`npm run setup\` in the capt checkout`,
    );
  return clusterApi;
}

/** Cluster API's e2e manifests at the same release (setup copies them beside the config): the conversion tests' corpus. */
export function clusterApiE2eData(): string {
  const dir = join(dirname(clusterApiConfig().config), 'e2e-data');
  if (!existsSync(dir))
    throw new Error(`Cluster API's e2e manifests are missing from ${dir}: run \`npm run setup\` in the capt checkout`);
  return dir;
}

/** Cluster API's templates for its development provider (the quick-start ClusterClass among them), copied by setup. */
export function clusterApiTemplates(): string {
  const dir = join(dirname(clusterApiConfig().config), 'templates');
  if (!existsSync(dir))
    throw new Error(`Cluster API's templates are missing from ${dir}: run \`npm run setup\` in the capt checkout`);
  return dir;
}

/** clusterctl, built by setup from the Cluster API release the management API serves. */
export const clusterctlPath = (): string => clusterApiTool('clusterctl', 'clusterctl');

/**
 * The driver of Cluster API's e2e framework (bench/capi/module/e2e-driver), built by setup at the same release;
 * its path changes with its source, so a stale one is never run.
 */
export const e2eDriverPath = (): string => clusterApiTool('e2eDriver', "Cluster API's e2e driver");

/**
 * The topology renderer (bench/capi/module/topology-render): Cluster API's own ClusterClass webhooks, reconciler and
 * desired-state generator at the same release, built by setup; its path changes with its source, like the driver's.
 */
export const topologyRenderPath = (): string => clusterApiTool('topologyRender', "Cluster API's topology renderer");

function clusterApiTool(key: 'clusterctl' | 'e2eDriver' | 'topologyRender', what: string): string {
  const path = clusterApiConfig()[key];
  if (!path)
    throw new Error(
      `${what} is missing from ${join(toolsDir(), 'manifest.json')}: run \`npm run setup\` in the capt checkout`,
    );
  return path;
}

/** The kubectl built with Kubernetes `version` (kubectl supports one minor of skew, so each version has its own). */
export function kubectlFor(version: string): string {
  const dir = toolPaths().kubernetes[version];
  if (!dir)
    throw new Error(
      `no kubectl for Kubernetes ${version}: capt's tools have ${availableKubernetesVersions().join(', ')}`,
    );
  return join(dir, 'kubectl');
}

/** Kubernetes versions with binaries, oldest first. */
export function availableKubernetesVersions(): string[] {
  return Object.keys(toolPaths().kubernetes).sort(compareVersions);
}
