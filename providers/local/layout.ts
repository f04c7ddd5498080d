import { join } from 'node:path';
import { captHome } from '../../src/config/capt-home';
import { pathUnder } from '../../src/util/checked-paths';

/** Where the local provider keeps a cluster's and its machines' state on this host. */
export const localRoot = () => join(captHome(), 'local');
/** The cluster agent serves its workers' `kubeadm join` on this port of the cluster's endpoint address. */
export const agentJoinPort = 6444;
/** Names become paths here, whoever sent them: each is checked, and the path stays under the local root. */
export const clusterDir = (namespace: string, cluster: string) =>
  pathUnder(localRoot(), ['namespace', namespace], ['cluster', cluster]);
export const namespaceDir = (namespace: string) => pathUnder(localRoot(), ['namespace', namespace]);
export const clusterRunDir = (dir: string) => join(dir, 'run');
/** The cluster agent's endpoint pool (load-balancer.ts EndpointPool), rewritten whenever it changes. */
export const endpointPoolPath = (dir: string) => join(clusterRunDir(dir), 'endpoint-pool.json');
/** The kubeconfig the simulated kubelets act with, as kwok's do (0600, written by createCluster). */
export const clusterKubeconfigPath = (dir: string) => join(dir, 'admin.kubeconfig');
export const machinesDir = (dir: string) => join(dir, 'machines');
export const machineDir = (dir: string, machine: string) => pathUnder(machinesDir(dir), ['machine', machine]);
/** The provider's record of a machine; its presence means the machine is fully laid out. */
export const machineRecordPath = (mdir: string) => join(mdir, 'machine.json');
export const machineRoot = (mdir: string) => join(mdir, 'root');
/** The host's own record of the machine's sandbox (its pid and log): beside the root, never inside it, so the machine cannot plant or redirect them. */
export const machineHostDir = (mdir: string) => join(mdir, 'host');
/** The host's name for a machine's sandbox process: `<name>.pid` and `<name>.log` in its host folder. */
export const sandboxProcess = 'sandbox';
/** Inside the machine these are /run/capt (pid files, logs) and /var/lib/kubelet. */
export const machineRunDir = (mdir: string) => join(machineRoot(mdir), 'run/capt');
export const kubeletConfigPath = (mdir: string) => join(machineRoot(mdir), 'var/lib/kubelet/config.json');
export const sentinelPath = (mdir: string) => join(machineRoot(mdir), 'run/cluster-api/bootstrap-success.complete');
export const bootstrapReportPath = (mdir: string) => join(machineRoot(mdir), 'run/cluster-api/bootstrap-report.json');

export interface LocalClusterRecord {
  namespace: string;
  name: string;
  endpoint: { host: string; port: number };
}

export interface LocalMachineRecord {
  namespace: string;
  cluster: string;
  name: string;
  role: 'control-plane' | 'worker';
  ip: string;
  providerID: string;
  version: string;
  power: 'on' | 'off';
  /** Out of the endpoint's load balancing (a control-plane machine about to leave). */
  detached?: boolean;
  /** The simulated kubelet is stopped on purpose (machine-faults.ts): the Node gets no heartbeat. */
  kubeletStopped?: boolean;
  bootDelaySeconds: number;
  failBootstrap: boolean;
  createdAt: string;
  /** The host user and group id the machine's root maps to (machine-sandbox.ts); absent on machines created before sandboxing by user. */
  hostId?: number;
  /** The kubelet's arguments given by an in-place update; until one, the machine's own registration says them. */
  kubeletExtraArgs?: Record<string, string>;
}

/** What `kubeadm init|join` leaves for the kubelet, as kubelet flags and config would say it. */
export interface KubeletRegistration {
  nodeName: string;
  providerID: string;
  kubeletVersion: string;
  ip: string;
  labels: Record<string, string>;
  taints: { key: string; value?: string; effect: string }[];
  /** The kubelet's `max-pods`: the Node's pod capacity (the kubelet's default, 110, when absent). */
  maxPods?: number;
}
