import { at, labelClusterName, prefixVersion, setDefault, type Defaulting } from './plain-object';

/** Cluster API's wait for a deleted Machine's Node to go, when the Machine does not say (DESIGN: 10 s). */
export const defaultNodeDeletionTimeoutSeconds = 10;

/**
 * A Machine as Cluster API's defaulting webhook leaves it: the cluster-name label, its version with its "v",
 * and spec.deletion.nodeDeletionTimeoutSeconds. (v1beta2 references carry no namespace, so there is none to
 * default on the bootstrap and infrastructure references.)
 */
export const defaultMachine: Defaulting = (machine) => {
  const spec = at(machine, 'spec');
  labelClusterName(at(machine, 'metadata', 'labels'), spec);
  prefixVersion(spec);
  setDefault(at(spec, 'deletion'), 'nodeDeletionTimeoutSeconds', defaultNodeDeletionTimeoutSeconds);
};
