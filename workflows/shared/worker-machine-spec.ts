import type { MachineTemplateModel } from '../../src/api/model';
import type { MachineSpec } from '../../src/contract/machine';
import type { ClusterFacts } from '../../src/contract/owner';

/** A worker machine of `template` (a MachineDeployment's or a standalone Machine's), joining the cluster with kubeadm join. */
export function workerMachineSpec(
  facts: ClusterFacts,
  name: string,
  template: MachineTemplateModel,
  own: {
    labels: Record<string, string>;
    annotations: Record<string, string>;
    owner: string;
    batchedReports?: boolean;
    reportsByUpdate?: boolean;
  },
): MachineSpec {
  const t = template;
  return {
    namespace: facts.namespace,
    name,
    cluster: facts.name,
    provider: facts.provider,
    role: 'worker',
    version: t.version,
    bootstrap: {
      role: 'join',
      config: t.bootstrap.config,
      controlPlaneEndpoint: facts.endpoint,
      serviceSubnet: facts.serviceSubnet,
      podSubnet: facts.podSubnet,
      serviceDomain: facts.serviceDomain,
    },
    infrastructure: { kind: t.infrastructure.kind, spec: t.infrastructure.spec },
    failureDomain: t.failureDomain,
    labels: own.labels,
    annotations: own.annotations,
    nodeDrainTimeoutSeconds: t.nodeDrainTimeoutSeconds,
    nodeVolumeDetachTimeoutSeconds: t.nodeVolumeDetachTimeoutSeconds,
    nodeDeletionTimeoutSeconds: t.nodeDeletionTimeoutSeconds,
    ...(t.taints ? { taints: t.taints } : {}),
    owner: own.owner,
    ...(own.batchedReports ? { batchedReports: true } : {}),
    ...(own.reportsByUpdate ? { reportsByUpdate: true } : {}),
    statusMemo: true,
    provisionInOneActivity: true,
    bootstrapInProvisioning: true,
  };
}
