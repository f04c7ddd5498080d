import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { configuredComponents } from '../contract/control-plane-flags';
import type { ClusterModel } from './model';
import type { ManifestProblem } from './manifest-error';
import { toolPaths } from '../tools';

/** The flags each component binary takes, from its own `--help` (read once per binary: about 0.2 s). */
const known = new Map<string, Set<string> | undefined>();

function flagsOf(binary: string): Set<string> | undefined {
  if (!known.has(binary)) {
    const help = spawnSync(binary, ['--help'], { encoding: 'utf8', timeout: 10_000, maxBuffer: 4 << 20 });
    const flags = [...(help.stdout ?? '').matchAll(/^\s+(?:-\w, )?--([a-z0-9-]+)/gm)].map((m) => m[1]!);
    // A binary that cannot say (missing, killed) checks nothing here; the machine's component then reports it.
    known.set(binary, help.status === 0 && flags.length ? new Set(flags) : undefined);
  }
  return known.get(binary);
}

/**
 * extraArgs naming a flag the control plane's version of the component does not have: refused here, where
 * the component would otherwise exit at once on every machine and the control plane never come up.
 */
export function componentFlagProblems(cluster: ClusterModel, file: string): ManifestProblem[] {
  const bin = toolPaths().kubernetes[cluster.controlPlane.version];
  const config = cluster.controlPlane.kubeadmConfigSpec.clusterConfiguration;
  if (!bin || !config) return [];
  return configuredComponents.flatMap(([field, component]) => {
    const args = Object.keys(config[field]?.extraArgs ?? {});
    const flags = args.length ? flagsOf(join(bin, component)) : undefined;
    return args
      .filter((name) => flags && !flags.has(name))
      .map((name) => ({
        file,
        index: 0,
        kind: 'KubeadmControlPlane',
        name: cluster.controlPlane.name,
        path: `spec.kubeadmConfigSpec.clusterConfiguration.${field}.extraArgs`,
        message: `${component} ${cluster.controlPlane.version} has no flag --${name}`,
        hint: `check the name against \`${component} --help\` of that version (without the leading dashes)`,
      }));
  });
}
