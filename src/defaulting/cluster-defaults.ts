import { isPlainObject, prefixVersion, type Defaulting } from './plain-object';

/**
 * A Cluster as Cluster API's defaulting webhook leaves it: only a managed topology's version gets its "v".
 * (The rest of its Cluster defaulting is the ClusterClass's variables, and capt takes no topology yet.)
 */
export const defaultCluster: Defaulting = (cluster) => {
  const topology = isPlainObject(cluster.spec) ? cluster.spec.topology : undefined;
  if (isPlainObject(topology)) prefixVersion(topology);
};
