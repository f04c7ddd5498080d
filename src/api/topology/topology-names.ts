import { createHash } from 'node:crypto';

/** The characters Kubernetes' name generator draws from (no vowels, no look-alikes), as Cluster API's names use. */
const alphabet = 'bcdfghjklmnpqrstvwxz2456789';

/**
 * The five characters Cluster API's topology names end in, drawn from `seed` instead of at random: applying the
 * same topology again names the same objects, so capt sees no change where there is none.
 */
export function nameSuffix(seed: string): string {
  const digest = createHash('sha256').update(seed).digest();
  return [...digest.subarray(0, 5)].map((b) => alphabet[b % alphabet.length]).join('');
}

/**
 * Names for a topology's objects, in the shapes Cluster API's default naming templates give them. The control
 * plane and MachineDeployments keep theirs for the cluster's life (machines are named after them); a template's
 * name follows its content, so a changed template is a new one, as Cluster API rotates templates.
 */
export const topologyNames = (namespace: string, cluster: string) => {
  const seeded = (what: string) => nameSuffix(`${namespace}/${cluster}/${what}`);
  const byContent = (spec: unknown) => nameSuffix(JSON.stringify(spec ?? {}));
  return {
    infrastructureCluster: () => `${cluster}-${seeded('infrastructure')}`,
    controlPlane: () => `${cluster}-${seeded('control-plane')}`,
    controlPlaneTemplate: (spec: unknown) => `${cluster}-control-plane-${byContent(spec)}`,
    machineDeployment: (topologyName: string) => `${cluster}-${topologyName}-${seeded(`md/${topologyName}`)}`,
    machineDeploymentTemplate: (topologyName: string, spec: unknown) => `${cluster}-${topologyName}-${byContent(spec)}`,
  };
};
