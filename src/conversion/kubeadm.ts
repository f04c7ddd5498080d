import { conditions, failure, replicaCounts } from './status-moves';
import { deletionTimeouts } from './cluster-api-core';
import { under, type Move } from './field-moves';
import { args, contractReference, seconds } from './value-mappings';

/**
 * The kubeadm kinds (bootstrap.cluster.x-k8s.io and controlplane.cluster.x-k8s.io): where v1beta1 and v1beta2
 * put the same thing in different places, as Cluster API's own conversion moves it (api/bootstrap/kubeadm and
 * api/controlplane/kubeadm at v1.14.2).
 */

const withArgs = (path: string, field = 'extraArgs'): Move => ({
  v1beta1: `${path}.${field}`,
  v1beta2: `${path}.${field}`,
  value: args,
});

/** A KubeadmConfig's spec, also inside a KubeadmConfigTemplate and a KubeadmControlPlane(Template). */
const kubeadmConfigSpec: Move[] = [
  withArgs('clusterConfiguration.apiServer'),
  withArgs('clusterConfiguration.controllerManager'),
  withArgs('clusterConfiguration.scheduler'),
  withArgs('clusterConfiguration.etcd.local'),
  withArgs('initConfiguration.nodeRegistration', 'kubeletExtraArgs'),
  withArgs('joinConfiguration.nodeRegistration', 'kubeletExtraArgs'),
  {
    v1beta1: 'clusterConfiguration.apiServer.timeoutForControlPlane',
    v1beta2: 'initConfiguration.timeouts.controlPlaneComponentHealthCheckSeconds',
    value: seconds,
  },
  {
    v1beta1: 'initConfiguration.bootstrapTokens',
    v1beta2: 'initConfiguration.bootstrapTokens',
    each: [{ v1beta1: 'ttl', v1beta2: 'ttlSeconds', value: seconds }],
  },
  {
    v1beta1: 'joinConfiguration.discovery.timeout',
    v1beta2: 'joinConfiguration.timeouts.tlsBootstrapSeconds',
    value: seconds,
  },
];

export const kubeadmConfigMoves: Move[] = [
  ...under('spec', 'spec', kubeadmConfigSpec),
  { v1beta1: 'status.ready', v1beta2: 'status.initialization.dataSecretCreated' },
  ...conditions,
  ...failure,
];

export const kubeadmConfigTemplateMoves: Move[] = under('spec.template.spec', 'spec.template.spec', kubeadmConfigSpec);

/** What a KubeadmControlPlane's spec and a KubeadmControlPlaneTemplate's `spec.template.spec` share. */
const controlPlaneSpec: Move[] = [
  ...under('kubeadmConfigSpec', 'kubeadmConfigSpec', kubeadmConfigSpec),
  // A control plane's machine template: beside its metadata in v1beta1, in the template's spec in v1beta2.
  ...under('machineTemplate', 'machineTemplate.spec', deletionTimeouts),
  { v1beta1: 'machineTemplate.taints', v1beta2: 'machineTemplate.spec.taints' },
  { v1beta1: 'rolloutStrategy.type', v1beta2: 'rollout.strategy.type' },
  { v1beta1: 'rolloutStrategy.rollingUpdate.maxSurge', v1beta2: 'rollout.strategy.rollingUpdate.maxSurge' },
  { v1beta1: 'rolloutBefore.certificatesExpiryDays', v1beta2: 'rollout.before.certificatesExpiryDays' },
  { v1beta1: 'rolloutAfter', v1beta2: 'rollout.after' },
  { v1beta1: 'remediationStrategy.maxRetry', v1beta2: 'remediation.maxRetry' },
  { v1beta1: 'remediationStrategy.retryPeriod', v1beta2: 'remediation.retryPeriodSeconds', value: seconds },
  { v1beta1: 'remediationStrategy.minHealthyPeriod', v1beta2: 'remediation.minHealthyPeriodSeconds', value: seconds },
  { v1beta1: 'machineNamingStrategy.template', v1beta2: 'machineNaming.template' },
];

export const kubeadmControlPlaneMoves: Move[] = [
  ...under('spec', 'spec', controlPlaneSpec),
  {
    v1beta1: 'spec.machineTemplate.infrastructureRef',
    v1beta2: 'spec.machineTemplate.spec.infrastructureRef',
    value: contractReference,
  },
  { v1beta1: 'spec.machineTemplate.readinessGates', v1beta2: 'spec.machineTemplate.spec.readinessGates' },
  { v1beta1: 'status.initialized', v1beta2: 'status.initialization.controlPlaneInitialized' },
  { v1beta1: 'status.lastRemediation.timestamp', v1beta2: 'status.lastRemediation.time' },
  ...replicaCounts(['readyReplicas', 'updatedReplicas', 'unavailableReplicas']),
  ...conditions,
  ...failure,
];

export const kubeadmControlPlaneTemplateMoves: Move[] = under(
  'spec.template.spec',
  'spec.template.spec',
  controlPlaneSpec,
);
