import { Agent, request } from 'node:https';
import type { KubeletRegistration } from '../layout';
import type { MachineMetadata } from '../machine-metadata';
import { nodeLabels, parseKubeadmConfig, type NodeRegistration } from './kubeadm-config';

/**
 * The part of `kubeadm join` every node does: discovery (the bootstrap token must authenticate against
 * the endpoint) and the kubelet's registration. It loads no Kubernetes client, so the cluster agent can
 * serve worker joins with it (see join-service.ts) and kubeadm-main.ts uses it for control-plane joins.
 */
export class KubeadmError extends Error {}

const controlPlaneTaint = { key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' };

/** What the kubelet is started with: kubeadm's node registration plus the machine's identity. */
export function kubeletRegistration(meta: MachineMetadata, registration: NodeRegistration | undefined, controlPlane: boolean): KubeletRegistration {
  const labels = { ...nodeLabels(registration), ...(controlPlane ? { 'node-role.kubernetes.io/control-plane': '', 'node.kubernetes.io/exclude-from-external-load-balancers': '' } : {}) };
  // As kubeadm: an explicit taint list replaces the default control-plane taint.
  const taints = registration?.taints ?? (controlPlane ? [controlPlaneTaint] : []);
  return { nodeName: registration?.name ?? meta.name, providerID: meta.providerID, kubeletVersion: meta.kubernetesVersion, ip: meta.ip, labels, taints };
}

// Kept-alive connections: the cluster agent checks every worker's token through the same endpoint.
const discoveryAgent = new Agent({ keepAlive: true, rejectUnauthorized: false });

function statusWithToken(url: string, token: string): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const req = request(url, { agent: discoveryAgent, headers: { authorization: `Bearer ${token}` }, timeout: 3000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

/** kubeadm's discovery: the token must authenticate against the endpoint (401 means it does not); an unreachable endpoint is retried for two minutes. */
export async function checkToken(endpoint: string, token: string | undefined): Promise<void> {
  if (!token) throw new KubeadmError('JoinConfiguration.discovery.bootstrapToken.token is required');
  const url = `https://${endpoint}/api/v1/namespaces/kube-public/configmaps/cluster-info`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      if ((await statusWithToken(url, token)) === 401) throw new KubeadmError(`the bootstrap token was rejected by ${endpoint} (HTTP 401): it is unknown or expired`);
      return;
    } catch (err) {
      if (err instanceof KubeadmError || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/** The discovery endpoint of a JoinConfiguration, falling back to the ClusterConfiguration's endpoint as kubeadm does. */
export function joinEndpoint(docs: ReturnType<typeof parseKubeadmConfig>): string {
  const endpoint = docs.join?.discovery?.bootstrapToken?.apiServerEndpoint ?? docs.cluster?.controlPlaneEndpoint;
  if (!endpoint) throw new KubeadmError('JoinConfiguration.discovery.bootstrapToken.apiServerEndpoint is required');
  return endpoint;
}

/** `kubeadm join --config FILE` of a worker, given the config file's and the machine metadata's text: the kubelet registration to write. */
export async function joinWorker(configText: string, metadataText: string): Promise<KubeletRegistration> {
  const docs = parseKubeadmConfig(configText);
  const meta = JSON.parse(metadataText) as MachineMetadata;
  await checkToken(joinEndpoint(docs), docs.join?.discovery?.bootstrapToken?.token);
  return kubeletRegistration(meta, docs.join?.nodeRegistration, false);
}
