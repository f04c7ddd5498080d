import type { MaintenanceWindow } from '../contract/maintenance-window';
import type { HealthCheckSpec } from '../contract/health-check';
import type { KubeadmConfigSpec } from '../contract/kubeadm-config-spec';
import type { ControlPlaneDoc } from './kinds/kubeadm';
import type { MachineDeploymentDoc, MachineTemplateDoc } from './kinds/cluster-api';

/**
 * capt's internal model of one cluster and everything that belongs to it, whichever API version the
 * manifests used. References are resolved: templates are inlined with their kind and name.
 */
export interface InfrastructureTemplate {
  kind: string;
  name: string;
  spec: Record<string, unknown>;
}

export interface BootstrapTemplate {
  kind: string;
  name: string;
  config: KubeadmConfigSpec;
}

export interface ControlPlaneModel extends Omit<ControlPlaneDoc, 'infrastructureRef'> {
  name: string;
  infrastructure: InfrastructureTemplate;
  /** The MachineHealthCheck that selects the control plane's machines, if one does. */
  healthCheck?: HealthCheckSpec;
  /** Its cluster's maintenance window, when it is annotated to replace machines only inside it. */
  maintenanceWindow?: MaintenanceWindow;
}

export interface MachineTemplateModel extends Omit<MachineTemplateDoc, 'bootstrapRef' | 'infrastructureRef'> {
  bootstrap: BootstrapTemplate;
  infrastructure: InfrastructureTemplate;
}

export interface MachineDeploymentModel extends Omit<MachineDeploymentDoc, 'template'> {
  name: string;
  template: MachineTemplateModel;
  /** The MachineHealthCheck that selects this MachineDeployment's machines, if one does. */
  healthCheck?: HealthCheckSpec;
  /** Its cluster's maintenance window, when it is annotated to replace machines only inside it. */
  maintenanceWindow?: MaintenanceWindow;
}

/** A Machine of its own (a worker outside any MachineDeployment), run by the cluster itself. */
export interface StandaloneMachineModel {
  name: string;
  template: MachineTemplateModel;
}

/** What a cluster made from a ClusterClass (spec.topology) keeps of it: how its workers take a new version. */
export interface TopologyModel {
  /** The ClusterClass it was made from. */
  class: string;
  /**
   * The class's spec.kubernetesVersions, oldest first: with them a version several minors ahead is reached by a
   * chained upgrade (src/contract/upgrade-plan.ts); without, one minor at a time.
   */
  kubernetesVersions?: string[];
  /** MachineDeployments upgrading at once after the control plane (the Cluster's topology.cluster.x-k8s.io/upgrade-concurrency, 1 by default). */
  upgradeConcurrency: number;
  /** In topology order, with the upgrade annotations of each one's topology metadata. */
  machineDeployments: { name: string; topologyName: string; deferUpgrade: boolean; holdUpgradeSequence: boolean }[];
}

export interface ClusterModel {
  namespace: string;
  name: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  provider: string;
  infrastructure: InfrastructureTemplate;
  serviceSubnet: string;
  podSubnet: string;
  serviceDomain: string;
  paused: boolean;
  controlPlane: ControlPlaneModel;
  machineDeployments: MachineDeploymentModel[];
  /** Absent in clusters created before standalone Machines were carried out. */
  machines?: StandaloneMachineModel[];
  /** Set when the cluster was made from a ClusterClass. */
  topology?: TopologyModel;
}
