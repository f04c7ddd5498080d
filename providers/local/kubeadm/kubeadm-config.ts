import { parseAllDocuments } from 'yaml';
import type { ControlPlaneComponentConfig } from '../../../src/contract/kubeadm-config-spec';

/** The parts of kubeadm's configuration documents (v1beta3 / v1beta4) that capt's local kubeadm honours. */
export interface NodeRegistration {
  name?: string;
  taints?: { key: string; value?: string; effect: string }[];
  kubeletExtraArgs?: Record<string, string> | { name: string; value: string }[];
}

export interface KubeadmDocuments {
  cluster?: {
    clusterName?: string;
    kubernetesVersion?: string;
    controlPlaneEndpoint?: string;
    networking?: { serviceSubnet?: string; podSubnet?: string; dnsDomain?: string };
    apiServer?: ControlPlaneComponentConfig & { certSANs?: string[] };
    controllerManager?: ControlPlaneComponentConfig;
    scheduler?: ControlPlaneComponentConfig;
  };
  init?: { bootstrapTokens?: { token: string; ttl?: string }[]; nodeRegistration?: NodeRegistration };
  join?: {
    discovery?: { bootstrapToken?: { apiServerEndpoint?: string; token?: string; caCertHashes?: string[] } };
    controlPlane?: object;
    nodeRegistration?: NodeRegistration;
  };
}

export function parseKubeadmConfig(text: string): KubeadmDocuments {
  const out: KubeadmDocuments = {};
  for (const doc of parseAllDocuments(text)) {
    const value = doc.toJS() as { kind?: string } | null;
    if (!value) continue;
    if (value.kind === 'ClusterConfiguration') out.cluster = value as KubeadmDocuments['cluster'];
    else if (value.kind === 'InitConfiguration') out.init = value as KubeadmDocuments['init'];
    else if (value.kind === 'JoinConfiguration') out.join = value as KubeadmDocuments['join'];
  }
  return out;
}

/** One kubelet argument from kubeletExtraArgs in either the v1beta3 map or the v1beta4 list form. */
export const kubeletArg = (registration: NodeRegistration | undefined, name: string): string | undefined => {
  const args = registration?.kubeletExtraArgs;
  return Array.isArray(args) ? args.find((a) => a.name === name)?.value : args?.[name];
};

/** `node-labels` from kubeletExtraArgs in either the v1beta3 map or the v1beta4 list form. */
export function nodeLabels(registration: NodeRegistration | undefined): Record<string, string> {
  const raw = kubeletArg(registration, 'node-labels');
  if (!raw) return {};
  return Object.fromEntries(
    raw
      .split(',')
      .filter(Boolean)
      .map((pair) => pair.split('=', 2) as [string, string])
      .map(([k, v]) => [k, v ?? '']),
  );
}

export function splitHostPort(endpoint: string, defaultPort = 6443): { host: string; port: number } {
  const [host, port] = endpoint.split(':');
  return { host: host!, port: port ? Number(port) : defaultPort };
}
