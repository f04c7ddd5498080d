import type { AdminClientCredentials } from '../src/contract/cluster-secrets';
import type { BootstrapDataRequest } from '../src/contract/bootstrap-request';
import type { MachineCertificatesPage } from '../src/contract/certificates';
import type { InPlaceCapability } from '../src/contract/in-place';

/**
 * The one interface every infrastructure provider implements. Every operation is idempotent: create is
 * get-or-create by name, delete of something already gone succeeds.
 */
export interface ClusterInfraSpec {
  namespace: string;
  name: string;
  /** Credentials the provider may need to act on the workload cluster (the local provider's kubelets), with its own endpoint. */
  adminCredentials: AdminClientCredentials;
}

export interface ClusterInfraStatus {
  ready: boolean;
  endpoint: { host: string; port: number };
  /** What the provider changes on the cluster's running machines without replacing them; absent: nothing. */
  inPlace?: InPlaceCapability;
}

export interface MachineInfraSpec {
  namespace: string;
  cluster: string;
  name: string;
  role: 'control-plane' | 'worker';
  /** Kubernetes version the machine's image carries. */
  version: string;
  /** The rendered cloud-init user-data (secret: it holds the bootstrap token, and the CAs on a control-plane machine). */
  bootstrapData: string;
  failureDomain?: string;
  /** The provider's machine template spec (for local: bootDelay, failBootstrap). */
  template: Record<string, unknown>;
}

/** A machine to provision whose bootstrap data the provisioning call renders from `bootstrap` (see provider-activities.ts). */
export type BootstrappedMachineSpec = Omit<MachineInfraSpec, 'bootstrapData'> & { bootstrap: BootstrapDataRequest };

export interface MachineInfraStatus {
  providerID: string;
  addresses: string[];
  power: 'on' | 'off';
  createdAt: string;
}

/** The bootstrap success sentinel, as Cluster API checks it; `failed` carries the failing command and its output. */
export type BootstrapCheck =
  | { state: 'pending'; detail: string }
  | { state: 'succeeded' }
  | { state: 'failed'; command: string; exitCode: number; output: string };

export interface MachineRef {
  namespace: string;
  cluster: string;
  name: string;
}

/** What an in-place update asks of the provider for one machine. */
export type InPlaceMachineUpdate = MachineRef & {
  role: MachineInfraSpec['role'];
  version: string;
  kubeletExtraArgs?: Record<string, string>;
};

export interface InfrastructureProvider {
  readonly name: string;
  /** Kubernetes versions this provider can run, oldest first. */
  kubernetesVersions(): string[];
  createCluster(spec: ClusterInfraSpec): Promise<ClusterInfraStatus>;
  describeCluster(namespace: string, name: string): Promise<ClusterInfraStatus | undefined>;
  deleteCluster(namespace: string, name: string): Promise<void>;
  createMachine(spec: MachineInfraSpec): Promise<MachineInfraStatus>;
  describeMachine(ref: MachineRef): Promise<MachineInfraStatus | undefined>;
  deleteMachine(ref: MachineRef): Promise<void>;
  /** How many machines the provider holds for a cluster: what `capt repair cluster` compares with the machine workflows. */
  countMachines(namespace: string, cluster: string): Promise<number>;
  /**
   * Has a running machine take `version` (and, when given, restart its kubelet with `kubeletExtraArgs`) where it
   * runs, as its capability (ClusterInfraStatus.inPlace) says it can; done already is success. Anything else fails
   * with the type InPlaceUpdateUnsupported, which no retry helps.
   */
  updateMachineInPlace(ref: InPlaceMachineUpdate): Promise<void>;
  /** Takes a control-plane machine out of the endpoint's load balancing before it leaves, and returns once the endpoint no longer forwards to it; gone is success. */
  detachFromEndpoint(ref: MachineRef): Promise<void>;
  checkBootstrap(ref: MachineRef): Promise<BootstrapCheck>;
  /** A page of a cluster's machines by name (after `after`, at most `limit`), with the certificates each holds. */
  machineCertificates(
    namespace: string,
    cluster: string,
    after: string | undefined,
    limit: number,
  ): Promise<MachineCertificatesPage>;
}
