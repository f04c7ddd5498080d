import type { z } from 'zod';
import {
  clusterV1beta1,
  clusterV1beta2,
  machineDeploymentV1beta1,
  machineDeploymentV1beta2,
  machineHealthCheckV1beta1,
  machineHealthCheckV1beta2,
  machineV1beta1,
  machineV1beta2,
} from './kinds/cluster-api';
import {
  kubeadmConfig,
  kubeadmConfigTemplate,
  kubeadmControlPlaneV1beta1,
  kubeadmControlPlaneV1beta2,
} from './kinds/kubeadm';
import { localCluster, localMachine, localMachineTemplate } from './kinds/local-provider';

/** Which schema parses each (group, version, kind), and which provider serves the infrastructure kinds. */
export const groups = {
  core: 'cluster.x-k8s.io',
  bootstrap: 'bootstrap.cluster.x-k8s.io',
  controlPlane: 'controlplane.cluster.x-k8s.io',
  infrastructure: 'infrastructure.cluster.x-k8s.io',
} as const;

export const supportedVersions = ['v1beta1', 'v1beta2'] as const;
export type Version = (typeof supportedVersions)[number];

const byVersion = (v1beta1: z.ZodType, v1beta2: z.ZodType): Record<Version, z.ZodType> => ({ v1beta1, v1beta2 });

export const kinds: Record<string, { group: string; schemas: Record<Version, z.ZodType> }> = {
  Cluster: { group: groups.core, schemas: byVersion(clusterV1beta1, clusterV1beta2) },
  Machine: { group: groups.core, schemas: byVersion(machineV1beta1, machineV1beta2) },
  MachineDeployment: { group: groups.core, schemas: byVersion(machineDeploymentV1beta1, machineDeploymentV1beta2) },
  MachineHealthCheck: { group: groups.core, schemas: byVersion(machineHealthCheckV1beta1, machineHealthCheckV1beta2) },
  KubeadmConfig: { group: groups.bootstrap, schemas: byVersion(kubeadmConfig('v1beta1'), kubeadmConfig('v1beta2')) },
  KubeadmConfigTemplate: {
    group: groups.bootstrap,
    schemas: byVersion(kubeadmConfigTemplate('v1beta1'), kubeadmConfigTemplate('v1beta2')),
  },
  KubeadmControlPlane: {
    group: groups.controlPlane,
    schemas: byVersion(kubeadmControlPlaneV1beta1, kubeadmControlPlaneV1beta2),
  },
};

/** Each installed provider's infrastructure kinds (what it offers, failure domains, is src/contract/provider-offers.ts). */
export const providerKinds: Record<
  string,
  { cluster: string; machineTemplate: string; machine: string; schemas: Record<string, z.ZodType> }
> = {
  local: {
    cluster: 'LocalCluster',
    machineTemplate: 'LocalMachineTemplate',
    machine: 'LocalMachine',
    schemas: { LocalCluster: localCluster, LocalMachineTemplate: localMachineTemplate, LocalMachine: localMachine },
  },
};

/** Where v1beta1 keeps the fields that capt names by their v1beta2 path; fields not listed did not move. */
const v1beta1Moves: Record<string, [RegExp, string][]> = {
  KubeadmControlPlane: [
    [/^spec\.rollout\.strategy\b/, 'spec.rolloutStrategy'],
    [/^spec\.rollout\.before\b/, 'spec.rolloutBefore'],
    [/^spec\.machineTemplate\.spec\./, 'spec.machineTemplate.'],
  ],
  MachineDeployment: [[/^spec\.rollout\.strategy\b/, 'spec.strategy']],
  MachineHealthCheck: [
    [/^spec\.checks\.unhealthyNodeConditions\b/, 'spec.unhealthyConditions'],
    [/^spec\.remediation\.triggerIf\.unhealthyInRange\b/, 'spec.unhealthyRange'],
    [/^spec\.remediation\.triggerIf\b/, 'spec'],
    [/^spec\.remediation\.templateRef\b/, 'spec.remediationTemplate'],
    [/^spec\.checks\./, 'spec.'],
  ],
};

/** A field's path as a document of `version` spells it, from its v1beta2 path. */
export function fieldPath(kind: string, version: Version, path: string): string {
  if (version !== 'v1beta1') return path;
  // v1beta1 writes deletion timeouts as durations beside the other fields: deletion.nodeDrainTimeoutSeconds is nodeDrainTimeout.
  const moved = (v1beta1Moves[kind] ?? []).reduce((p, [from, to]) => p.replace(from, to), path);
  return moved.replace(/\.deletion\.(node\w+Timeout)Seconds$/, '.$1');
}

export function providerOfKind(kind: string): string | undefined {
  return Object.entries(providerKinds).find(([, p]) => Object.hasOwn(p.schemas, kind))?.[0];
}

export function installedKindsSummary(): string {
  return Object.entries(providerKinds)
    .map(([name, p]) => `${name} (${Object.keys(p.schemas).join(', ')})`)
    .join('; ');
}
