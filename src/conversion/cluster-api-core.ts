import { under, type Move } from './field-moves';
import { conditions, failure, replicaCounts } from './status-moves';
import { contractReference, failureDomains, nodeReference, remediationTemplate, seconds } from './value-mappings';

/**
 * Cluster API core (cluster.x-k8s.io): where v1beta1 and v1beta2 put the same thing in different places, as
 * Cluster API's own conversion moves it (api/core/v1beta1 at v1.14.2).
 */

/** How long a Machine's deletion waits (drain, volumes, the Node): durations in v1beta1, seconds under `deletion` in v1beta2. */
export const deletionTimeouts: Move[] = ['nodeDrainTimeout', 'nodeVolumeDetachTimeout', 'nodeDeletionTimeout'].map(
  (field) => ({ v1beta1: field, v1beta2: `deletion.${field}Seconds`, value: seconds }),
);

/** A Machine's spec, also the template of MachineSets and MachineDeployments. */
const machineSpec: Move[] = [
  { v1beta1: 'bootstrap.configRef', v1beta2: 'bootstrap.configRef', value: contractReference },
  { v1beta1: 'infrastructureRef', v1beta2: 'infrastructureRef', value: contractReference },
  ...deletionTimeouts,
];

/** A MachineDeployment's rollout strategy, also in a Cluster's topology: under `rollout` in v1beta2, its deletion order apart. */
const rolloutStrategy: Move[] = [
  { v1beta1: 'strategy.type', v1beta2: 'rollout.strategy.type' },
  ...['maxSurge', 'maxUnavailable'].map((field) => ({
    v1beta1: `strategy.rollingUpdate.${field}`,
    v1beta2: `rollout.strategy.rollingUpdate.${field}`,
  })),
  { v1beta1: 'strategy.rollingUpdate.deletePolicy', v1beta2: 'deletion.order' },
];

const unhealthyCondition: Move[] = [{ v1beta1: 'timeout', v1beta2: 'timeoutSeconds', value: seconds }];

/** A MachineHealthCheck's spec, also a Cluster topology's health checks: grouped into checks and remediation in v1beta2. */
const healthChecks: Move[] = [
  { v1beta1: 'unhealthyConditions', v1beta2: 'checks.unhealthyNodeConditions', each: unhealthyCondition },
  { v1beta1: 'unhealthyMachineConditions', v1beta2: 'checks.unhealthyMachineConditions', each: unhealthyCondition },
  { v1beta1: 'nodeStartupTimeout', v1beta2: 'checks.nodeStartupTimeoutSeconds', value: seconds },
  { v1beta1: 'maxUnhealthy', v1beta2: 'remediation.triggerIf.unhealthyLessThanOrEqualTo' },
  { v1beta1: 'unhealthyRange', v1beta2: 'remediation.triggerIf.unhealthyInRange' },
  { v1beta1: 'remediationTemplate', v1beta2: 'remediation.templateRef', value: remediationTemplate },
];

/** A topology's health check: `machineHealthCheck` (`enable`) in v1beta1, `healthCheck` (`enabled`) in v1beta2. */
const topologyHealthCheck: Move[] = [
  { v1beta1: 'machineHealthCheck.enable', v1beta2: 'healthCheck.enabled' },
  ...under('machineHealthCheck', 'healthCheck', healthChecks),
];

/** A managed topology (ClusterClass-based Cluster): its control plane, MachineDeployments and MachinePools. */
const topology: Move[] = [
  { v1beta1: 'class', v1beta2: 'classRef.name' },
  { v1beta1: 'classNamespace', v1beta2: 'classRef.namespace' },
  ...under('controlPlane', 'controlPlane', [...deletionTimeouts, ...topologyHealthCheck]),
  {
    v1beta1: 'workers.machineDeployments',
    v1beta2: 'workers.machineDeployments',
    each: [
      ...deletionTimeouts,
      ...rolloutStrategy,
      { v1beta1: 'strategy.remediation.maxInFlight', v1beta2: 'healthCheck.remediation.maxInFlight' },
      ...topologyHealthCheck,
    ],
  },
  { v1beta1: 'workers.machinePools', v1beta2: 'workers.machinePools', each: deletionTimeouts },
];

export const clusterMoves: Move[] = [
  { v1beta1: 'spec.controlPlaneRef', v1beta2: 'spec.controlPlaneRef', value: contractReference },
  { v1beta1: 'spec.infrastructureRef', v1beta2: 'spec.infrastructureRef', value: contractReference },
  ...under('spec.topology', 'spec.topology', topology),
  ...conditions,
  ...failure,
  { v1beta1: 'status.controlPlaneReady', v1beta2: 'status.initialization.controlPlaneInitialized' },
  { v1beta1: 'status.infrastructureReady', v1beta2: 'status.initialization.infrastructureProvisioned' },
  { v1beta1: 'status.failureDomains', v1beta2: 'status.failureDomains', value: failureDomains },
  { v1beta1: 'status.v1beta2.controlPlane', v1beta2: 'status.controlPlane' },
  { v1beta1: 'status.v1beta2.workers', v1beta2: 'status.workers' },
];

export const machineMoves: Move[] = [
  ...under('spec', 'spec', machineSpec),
  { v1beta1: 'status.nodeRef', v1beta2: 'status.nodeRef', value: nodeReference },
  { v1beta1: 'status.bootstrapReady', v1beta2: 'status.initialization.bootstrapDataSecretCreated' },
  { v1beta1: 'status.infrastructureReady', v1beta2: 'status.initialization.infrastructureProvisioned' },
  ...conditions,
  ...failure,
];

/** What MachineSets and MachineDeployments share: the Machine template, its readiness wait, naming. */
const machineOwner: Move[] = [
  ...under('spec.template.spec', 'spec.template.spec', machineSpec),
  { v1beta1: 'spec.minReadySeconds', v1beta2: 'spec.template.spec.minReadySeconds' },
  { v1beta1: 'spec.machineNamingStrategy.template', v1beta2: 'spec.machineNaming.template' },
  ...conditions,
];

export const machineSetMoves: Move[] = [
  ...machineOwner,
  { v1beta1: 'spec.deletePolicy', v1beta2: 'spec.deletion.order' },
  ...replicaCounts(['readyReplicas', 'availableReplicas', 'fullyLabeledReplicas']),
  ...failure,
];

export const machineDeploymentMoves: Move[] = [
  ...machineOwner,
  ...under('spec', 'spec', rolloutStrategy),
  { v1beta1: 'spec.strategy.remediation.maxInFlight', v1beta2: 'spec.remediation.maxInFlight' },
  { v1beta1: 'spec.rolloutAfter', v1beta2: 'spec.rollout.after' },
  ...replicaCounts(['readyReplicas', 'availableReplicas', 'updatedReplicas', 'unavailableReplicas']),
];

export const machineHealthCheckMoves: Move[] = [...under('spec', 'spec', healthChecks), ...conditions];
