/** Cluster API's KubeadmConfigSpec, as capt's internal model carries it (both API versions map here). */
export interface BootstrapFile {
  path: string;
  content: string;
  permissions?: string;
  owner?: string;
  encoding?: 'base64' | 'gzip' | 'gzip+base64';
  append?: boolean;
}

export interface BootstrapUser {
  name: string;
  groups?: string;
  shell?: string;
  sudo?: string;
  sshAuthorizedKeys?: string[];
}

export interface NodeRegistrationOptions {
  name?: string;
  taints?: { key: string; value?: string; effect: string }[];
  kubeletExtraArgs?: Record<string, string>;
}

/** kubeadm's HostPathMount: a path of the machine a control-plane component sees at mountPath. */
export interface HostPathMount {
  name: string;
  hostPath: string;
  mountPath: string;
  readOnly?: boolean;
  pathType?: HostPathType;
}

/** The hostPath types a local machine can honour (it has no devices or sockets of its own to offer). */
export const hostPathTypes = ['DirectoryOrCreate', 'Directory', 'FileOrCreate', 'File'] as const;
export type HostPathType = (typeof hostPathTypes)[number];

/** A control-plane component's settings in ClusterConfiguration. */
export interface ControlPlaneComponentConfig {
  /** Flags, by name without dashes: kubeadm's own flags of the same name are replaced. */
  extraArgs?: Record<string, string>;
  extraVolumes?: HostPathMount[];
}

export interface KubeadmConfigSpec {
  clusterConfiguration?: {
    apiServer?: ControlPlaneComponentConfig & { certSANs?: string[] };
    controllerManager?: ControlPlaneComponentConfig;
    scheduler?: ControlPlaneComponentConfig;
    networking?: { serviceSubnet?: string; podSubnet?: string; dnsDomain?: string };
  };
  initConfiguration?: { nodeRegistration?: NodeRegistrationOptions };
  joinConfiguration?: { nodeRegistration?: NodeRegistrationOptions };
  files?: BootstrapFile[];
  preKubeadmCommands?: string[];
  postKubeadmCommands?: string[];
  users?: BootstrapUser[];
  format?: 'cloud-config';
}
