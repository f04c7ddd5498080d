import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { toolsDir } from '../../src/tools';

/** The wrapper module (bench/capi/module) that pins Cluster API; compiled code runs from dist/bench/capi. */
export const wrapperModuleDir = join(__dirname, '../../../bench/capi/module');

/** The Cluster API version the wrapper module pins (its replace line for the core module). */
export function pinnedVersion(): string {
  const goMod = readFileSync(join(wrapperModuleDir, 'go.mod'), 'utf8');
  const version = /^\s*sigs\.k8s\.io\/cluster-api => sigs\.k8s\.io\/cluster-api (v\S+)/m.exec(goMod)?.[1];
  if (!version)
    throw new Error(
      `no pinned Cluster API version in ${join(wrapperModuleDir, 'go.mod')}: run bench/capi/gen-module.sh vX.Y.Z`,
    );
  return version;
}

/** Where a module's source lies in the Go module cache (downloaded if missing, which the build has done). */
function moduleDir(path: string, version: string): string {
  const out = execFileSync('go', ['mod', 'download', '-json', `${path}@${version}`], {
    cwd: wrapperModuleDir,
    encoding: 'utf8',
  });
  const dir = (JSON.parse(out) as { Dir?: string; Error?: string }).Dir;
  if (!dir) throw new Error(`go mod download ${path}@${version} gave no directory: ${out}`);
  return dir;
}

/** The four managers, in the order their webhook ports are given (9443 + index). */
export const managerNames = ['core', 'bootstrap-kubeadm', 'controlplane-kubeadm', 'infrastructure-docker'] as const;
export type ManagerName = (typeof managerNames)[number];

export interface CapiModules {
  version: string;
  /** Each manager's kustomize config folder in the module cache (crd/, webhook/, manager/, default/). */
  configDirs: Record<ManagerName, string>;
  /** Each manager's binary in capt's tool cache. */
  binaries: Record<ManagerName, string>;
}

/** The pinned version's managers (built by bench/capi/build.sh) and their config folders. */
export function capiModules(): CapiModules {
  const version = pinnedVersion();
  const core = moduleDir('sigs.k8s.io/cluster-api', version);
  const test = moduleDir('sigs.k8s.io/cluster-api/test', version);
  const configDirs: Record<ManagerName, string> = {
    core: join(core, 'core/config'),
    'bootstrap-kubeadm': join(core, 'bootstrap/kubeadm/config'),
    'controlplane-kubeadm': join(core, 'controlplane/kubeadm/config'),
    'infrastructure-docker': join(test, 'infrastructure/docker/config'),
  };
  const bin = join(toolsDir(), 'cluster-api', version);
  const binaries = Object.fromEntries(managerNames.map((m) => [m, join(bin, m)])) as Record<ManagerName, string>;
  const missing = managerNames.filter((m) => !existsSync(binaries[m]));
  if (missing.length)
    throw new Error(
      `Cluster API ${version}'s ${missing.join(', ')} not built in ${bin}: run bench/capi/build.sh (about 12 minutes once)`,
    );
  return { version, configDirs, binaries };
}
