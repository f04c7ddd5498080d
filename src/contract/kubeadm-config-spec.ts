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

export interface KubeadmConfigSpec {
  clusterConfiguration?: {
    apiServer?: { certSANs?: string[] };
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
