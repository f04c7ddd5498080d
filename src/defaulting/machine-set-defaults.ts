import { nameAsLabelValue } from './label-value';
import { at, labelClusterName, nameOf, oldReplicas, prefixVersion, setDefault, type Defaulting } from './plain-object';
import { defaultReplicas } from './replicas-default';
import { defaultSelector } from './selector-default';

/** Cluster API's label naming a Machine's MachineSet. */
export const setNameLabel = 'cluster.x-k8s.io/set-name';

/**
 * A MachineSet as Cluster API's defaulting webhook leaves it: the cluster-name label on it (not on its
 * selector), replicas as a MachineDeployment's, a selector of its own name (as a label value) when it has
 * none, the template's version with its "v". The bridge's own MachineSets carry all of it already.
 */
export const defaultMachineSet: Defaulting = (ms, old) => {
  const spec = at(ms, 'spec');
  labelClusterName(at(ms, 'metadata', 'labels'), spec);
  setDefault(spec, 'replicas', defaultReplicas(at(ms, 'metadata')?.annotations, oldReplicas(old), !!old));
  const templateLabels = at(spec, 'template', 'metadata', 'labels');
  defaultSelector(at(spec, 'selector'), templateLabels, setNameLabel, nameAsLabelValue(nameOf(ms)));
  prefixVersion(at(spec, 'template', 'spec'));
};
