import type { Condition, MachineStatus } from '../machine/machine-model';

/** What a control plane or MachineDeployment reports to its cluster, and what `capt describe` shows. */
export interface OwnerStatus {
  kind: 'KubeadmControlPlane' | 'MachineDeployment';
  namespace: string;
  name: string;
  version: string;
  replicas: number;
  readyReplicas: number;
  /** Running for minReadySeconds (MachineDeployments; the control plane counts ready ones). */
  availableReplicas: number;
  /** Running machines of the current template. */
  updatedReplicas: number;
  /** The rollout is paused: scaling applies, machines are not replaced. */
  paused: boolean;
  /** Every machine on the current template and available, none leaving. */
  rolloutComplete: boolean;
  /** MachineDeployments: their MachineSets, newest last, with how many machines each holds. */
  machineSets?: { name: string; revision: number; version: string; machines: number; ready: number }[];
  /** The current template's revision and hash (a rollout undo changes them without the cluster's manifest). */
  revision: number;
  templateHash: string;
  /** The control plane: its first machine has initialised the cluster. */
  initialized: boolean;
  deleted: boolean;
  step: string;
  conditions: Condition[];
  machines: MachineStatus[];
  /** Control plane only: the last passed preflights (etcd members, machines, apiserver versions). */
  preflights?: { at: string; members: string[]; machines: string[]; apiserverVersions: Record<string, string> }[];
  /** Control plane with certificatesExpiryDays: when each machine's apiserver certificate expires. */
  certificatesExpireAt?: Record<string, string>;
  /** Grows with every report: signals may arrive out of order, and the receiver keeps the newest. */
  sequence: number;
}

/** Where a cluster's children live, to reach them by signal. */
export interface ClusterFacts {
  namespace: string;
  name: string;
  provider: string;
  /** host:port of the control-plane endpoint. */
  endpoint: string;
  serviceSubnet: string;
  podSubnet: string;
}
