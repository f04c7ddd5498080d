import { topologyNames } from '../api/topology/topology-names';
import type { ClusterView } from '../contract/cluster';
import type { ApiObject } from './management-client';

type ReplicasTopology = {
  controlPlane?: { replicas?: number } & Record<string, unknown>;
  workers?: { machineDeployments?: ({ name: string; replicas?: number } & Record<string, unknown>)[] } & Record<
    string,
    unknown
  >;
} & Record<string, unknown>;

/**
 * A scale made with `capt scale` (or an owner's remediation) of a Cluster made from a topology, as the merge patch
 * of its `spec.topology` that shows it: the control plane's and each MachineDeployment's replicas as the workflows
 * carry them out, where the topology sets them (a topology that leaves them to an autoscaler is left so).
 * Undefined when the topology shows them already. The list is written whole, as a merge patch replaces lists.
 */
export function topologyReplicasPatch(
  cluster: ApiObject,
  view: ClusterView,
): { spec: { topology: object } } | undefined {
  const topology = cluster.spec?.topology as ReplicasTopology | undefined;
  if (!topology) return undefined;
  const names = topologyNames(cluster.metadata.namespace, cluster.metadata.name);
  let changed = false;
  const replicas = (written: number | undefined, running: number | undefined) => {
    if (written === undefined || running === undefined || written === running) return written;
    changed = true;
    return running;
  };
  const controlPlane = topology.controlPlane && {
    ...topology.controlPlane,
    replicas: replicas(topology.controlPlane.replicas, view.controlPlane?.replicas),
  };
  const deployments = topology.workers?.machineDeployments?.map((md) => ({
    ...md,
    replicas: replicas(
      md.replicas,
      view.machineDeployments.find((o) => o.name === names.machineDeployment(md.name))?.replicas,
    ),
  }));
  if (!changed) return undefined;
  return {
    spec: {
      topology: {
        ...(controlPlane && { controlPlane }),
        ...(deployments && { workers: { ...topology.workers, machineDeployments: deployments } }),
      },
    },
  };
}
