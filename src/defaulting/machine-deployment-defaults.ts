import { at, labelClusterName, nameOf, oldReplicas, prefixVersion, setDefault, type Defaulting } from './plain-object';
import { defaultReplicas } from './replicas-default';
import { defaultSelector } from './selector-default';

/** Cluster API's label naming a Machine's MachineDeployment. */
export const deploymentNameLabel = 'cluster.x-k8s.io/deployment-name';

/**
 * A MachineDeployment as Cluster API's defaulting webhook leaves it: the cluster-name label on it, its
 * selector and its template; replicas; rollout strategy RollingUpdate with maxSurge 1 and maxUnavailable 0;
 * a selector of its own name when it has none; the template's version with its "v".
 */
export const defaultMachineDeployment: Defaulting = (md, old) => {
  const spec = at(md, 'spec');
  labelClusterName(at(md, 'metadata', 'labels'), spec);
  setDefault(spec, 'replicas', defaultReplicas(at(md, 'metadata')?.annotations, oldReplicas(old), !!old));
  const strategy = at(spec, 'rollout', 'strategy');
  setDefault(strategy, 'type', 'RollingUpdate');
  if (strategy?.type === 'RollingUpdate') {
    const rollingUpdate = at(strategy, 'rollingUpdate');
    setDefault(rollingUpdate, 'maxSurge', 1);
    setDefault(rollingUpdate, 'maxUnavailable', 0);
  }
  const templateLabels = at(spec, 'template', 'metadata', 'labels');
  const selectorLabels = defaultSelector(at(spec, 'selector'), templateLabels, deploymentNameLabel, nameOf(md));
  labelClusterName(selectorLabels, spec);
  labelClusterName(templateLabels, spec);
  prefixVersion(at(spec, 'template', 'spec'));
};
