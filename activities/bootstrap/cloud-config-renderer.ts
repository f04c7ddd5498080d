import { stringify } from 'yaml';
import type { BootstrapRole } from '../../src/contract/machine';
import type { BootstrapFile, KubeadmConfigSpec, NodeRegistrationOptions } from '../../src/contract/kubeadm-config-spec';

/**
 * Renders a KubeadmConfigSpec into cloud-init user-data, as Cluster API's kubeadm bootstrap provider does:
 * files first, then preKubeadmCommands, kubeadm chained with the success sentinel, postKubeadmCommands.
 */

export interface ClusterFacts {
  clusterName: string;
  kubernetesVersion: string;
  /** host:port of the control-plane endpoint. */
  controlPlaneEndpoint: string;
  serviceSubnet: string;
  podSubnet: string;
  serviceDomain: string;
  /** The bootstrap token (secret: it lives only in the rendered data, never in workflow state). */
  token: string;
  /** The cluster CA's pin (caCertHash), which a joining machine checks the control plane against. */
  caCertHash: string;
  /** Files of etc/kubernetes/pki holding the cluster CAs, for control-plane machines (secret). */
  clusterPki?: Record<string, string>;
}

export const sentinel = '/run/cluster-api/bootstrap-success.complete';
const uninitializedTaint = { key: 'node.cluster.x-k8s.io/uninitialized', effect: 'NoSchedule' };
const controlPlaneTaint = { key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' };

function withTaints(registration: NodeRegistrationOptions | undefined, controlPlane: boolean) {
  // Cluster API keeps kubeadm's default control-plane taint and adds its own until the Machine owns the Node.
  const base = registration?.taints ?? (controlPlane ? [controlPlaneTaint] : []);
  const taints = base.some((t) => t.key === uninitializedTaint.key) ? base : [...base, uninitializedTaint];
  const kubeletExtraArgs = registration?.kubeletExtraArgs;
  return {
    ...(registration?.name ? { name: registration.name } : {}),
    taints,
    ...(kubeletExtraArgs ? { kubeletExtraArgs } : {}),
  };
}

/** The named fields that are set, so an absent one stays absent in the YAML. */
const pick = <T extends object, K extends keyof T>(o: T, keys: K[]): Partial<Pick<T, K>> =>
  Object.fromEntries(keys.filter((k) => o[k] !== undefined).map((k) => [k, o[k]])) as Partial<Pick<T, K>>;

function kubeadmDocuments(role: BootstrapRole, spec: KubeadmConfigSpec, facts: ClusterFacts): string {
  const api = 'kubeadm.k8s.io/v1beta3';
  const cluster = {
    apiVersion: api,
    kind: 'ClusterConfiguration',
    clusterName: facts.clusterName,
    kubernetesVersion: facts.kubernetesVersion,
    controlPlaneEndpoint: facts.controlPlaneEndpoint,
    networking: { serviceSubnet: facts.serviceSubnet, podSubnet: facts.podSubnet, dnsDomain: facts.serviceDomain },
    ...pick(spec.clusterConfiguration ?? {}, ['apiServer', 'controllerManager', 'scheduler']),
  };
  const second =
    role === 'init'
      ? {
          apiVersion: api,
          kind: 'InitConfiguration',
          bootstrapTokens: [{ token: facts.token }],
          nodeRegistration: withTaints(spec.initConfiguration?.nodeRegistration, true),
        }
      : {
          apiVersion: api,
          kind: 'JoinConfiguration',
          discovery: {
            bootstrapToken: {
              apiServerEndpoint: facts.controlPlaneEndpoint,
              token: facts.token,
              caCertHashes: [facts.caCertHash],
            },
          },
          nodeRegistration: withTaints(spec.joinConfiguration?.nodeRegistration, role === 'join-control-plane'),
          ...(role === 'join-control-plane' ? { controlPlane: {} } : {}),
        };
  return [cluster, second].map((d) => stringify(d)).join('---\n');
}

export function renderCloudConfig(role: BootstrapRole, spec: KubeadmConfigSpec, facts: ClusterFacts): string {
  const configPath = role === 'init' ? '/run/kubeadm/kubeadm.yaml' : '/run/kubeadm/kubeadm-join-config.yaml';
  const pkiFiles: BootstrapFile[] =
    role === 'join'
      ? []
      : Object.entries(facts.clusterPki ?? {}).map(([path, content]) => ({
          path: `/etc/kubernetes/pki/${path}`,
          content,
          permissions: path.endsWith('.key') ? '0600' : '0640',
          owner: 'root:root',
        }));
  const files = [
    ...pkiFiles,
    ...(spec.files ?? []),
    { path: configPath, content: kubeadmDocuments(role, spec, facts), permissions: '0640', owner: 'root:root' },
  ];
  const kubeadm =
    role === 'init'
      ? `kubeadm init --config ${configPath}`
      : `kubeadm join --config ${configPath}${role === 'join-control-plane' ? ' --control-plane' : ''}`;
  const cloudConfig = {
    write_files: files.map((f) => ({
      path: f.path,
      ...(f.owner ? { owner: f.owner } : {}),
      permissions: f.permissions ?? '0644',
      ...(f.encoding ? { encoding: f.encoding === 'base64' ? 'b64' : f.encoding } : {}),
      ...(f.append ? { append: true } : {}),
      content: f.content,
    })),
    runcmd: [
      ...(spec.preKubeadmCommands ?? []),
      `${kubeadm} && echo success > ${sentinel}`,
      ...(spec.postKubeadmCommands ?? []),
    ],
  };
  return `## template: jinja\n#cloud-config\n${stringify(cloudConfig, { lineWidth: 0 })}`;
}
