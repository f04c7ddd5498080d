import type { ClusterModel } from '../api/model';
import type { KubeClient } from '../kube/kube-client';
import { madeMachineObjects, type ObjectsByKind } from './cluster-documents';

/** The quota Kubernetes counts Machine objects by. */
export const machinesQuotaKey = 'count/machines.cluster.x-k8s.io';

/**
 * Why a manifest would make more Machines than the namespace's quota on `count/machines.cluster.x-k8s.io`
 * leaves, in Kubernetes' own words, or undefined. The bridge makes a cluster's Machine objects for the
 * machines its control plane and MachineDeployments run, so their replicas are checked before the workflows
 * get them (as Cluster API's MachineSets are held back by the quota), not after machines were built.
 * Standalone Machines are the user's own objects: the quota admission counted them already.
 */
export async function machinesOverQuota(
  core: KubeClient,
  model: ClusterModel,
  objects: ObjectsByKind,
): Promise<string | undefined> {
  const desired = model.controlPlane.replicas + model.machineDeployments.reduce((n, md) => n + md.replicas, 0);
  const increase = desired - madeMachineObjects(objects, model.namespace, model.name).length;
  if (increase <= 0) return undefined;
  for (const quota of await core.resourceQuotas(model.namespace)) {
    const hard = Number(quota.spec?.hard?.[machinesQuotaKey]);
    const used = Number(quota.status?.used?.[machinesQuotaKey] ?? 0);
    if (!Number.isFinite(hard) || used + increase <= hard) continue;
    return (
      `Cluster ${model.namespace}/${model.name}: its control plane's and MachineDeployments' replicas make ${desired} Machines, ` +
      `${increase} more than it has: exceeded quota: ${quota.metadata?.name}, requested: ${machinesQuotaKey}=${increase}, ` +
      `used: ${machinesQuotaKey}=${used}, limited: ${machinesQuotaKey}=${hard}; lower the replicas, or have the quota raised`
    );
  }
  return undefined;
}
