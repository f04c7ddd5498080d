import { at, prefixVersion, setDefault, type Defaulting } from './plain-object';

/**
 * A KubeadmControlPlane as Cluster API's defaulting webhook leaves it: one replica, its version with its
 * "v", rollout strategy RollingUpdate (the only one there is) with maxSurge 1. Nothing in kubeadmConfigSpec:
 * Cluster API v1.14 no longer defaults its format or pull policies (only in a topology's dry runs).
 */
export const defaultControlPlane: Defaulting = (kcp) => {
  const spec = at(kcp, 'spec');
  setDefault(spec, 'replicas', 1);
  prefixVersion(spec);
  const strategy = at(spec, 'rollout', 'strategy');
  setDefault(strategy, 'type', 'RollingUpdate');
  setDefault(at(strategy, 'rollingUpdate'), 'maxSurge', 1);
};
