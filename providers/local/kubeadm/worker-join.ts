import { Agent, request } from 'node:https';
import { caCertHash } from '../../../src/pki/certificates';
import type { KubeletRegistration } from '../layout';
import type { MachineMetadata } from '../machine-metadata';
import { maxPods } from '../../../src/contract/kubelet-max-pods';
import { kubeletArg, nodeLabels, parseKubeadmConfig, type NodeRegistration } from './kubeadm-config';

/**
 * The part of `kubeadm join` every node does: discovery (the bootstrap token must authenticate against
 * the endpoint) and the kubelet's registration. It loads no Kubernetes client, so the cluster agent can
 * serve worker joins with it (see join-service.ts) and kubeadm-main.ts uses it for control-plane joins.
 */
export class KubeadmError extends Error {}

const controlPlaneTaint = { key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' };

/** What the kubelet is started with: kubeadm's node registration plus the machine's identity. */
export function kubeletRegistration(
  meta: MachineMetadata,
  registration: NodeRegistration | undefined,
  controlPlane: boolean,
): KubeletRegistration {
  const labels = {
    ...nodeLabels(registration),
    ...(controlPlane
      ? { 'node-role.kubernetes.io/control-plane': '', 'node.kubernetes.io/exclude-from-external-load-balancers': '' }
      : {}),
  };
  // As kubeadm: an explicit taint list replaces the default control-plane taint.
  const taints = registration?.taints ?? (controlPlane ? [controlPlaneTaint] : []);
  const pods = maxPods(kubeletArg(registration, 'max-pods'));
  return {
    nodeName: registration?.name ?? meta.name,
    providerID: meta.providerID,
    kubeletVersion: meta.kubernetesVersion,
    ip: meta.ip,
    labels,
    taints,
    ...(pods ? { maxPods: pods } : {}),
  };
}

// Kept-alive connections: the cluster agent checks every worker's token through the same endpoint.
export const discoveryAgent = new Agent({ keepAlive: true });

/** The endpoint is trusted only through the cluster CA (which the caller pinned), never unverified. */
function statusWithToken(url: string, token: string, caCert: string): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const req = request(
      url,
      { agent: discoveryAgent, ca: caCert, headers: { authorization: `Bearer ${token}` }, timeout: 3000 },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

/**
 * kubeadm's discovery: the cluster CA must be the one the JoinConfiguration pins (caCertHashes), the endpoint
 * must present a certificate that CA signed, and the token must authenticate against it (401 means it does
 * not); an unreachable endpoint is retried for two minutes.
 */
export async function checkToken(
  endpoint: string,
  discovery: { token?: string; caCertHashes?: string[] } | undefined,
  caCert: string,
): Promise<void> {
  const token = discovery?.token;
  if (!token) throw new KubeadmError('JoinConfiguration.discovery.bootstrapToken.token is required');
  const pin = caCertHash(caCert);
  if (!discovery?.caCertHashes?.includes(pin)) {
    throw new KubeadmError(
      `JoinConfiguration.discovery.bootstrapToken.caCertHashes does not pin this cluster's CA (${pin}): the join configuration is for another cluster, or was altered`,
    );
  }
  const url = `https://${endpoint}/api/v1/namespaces/kube-public/configmaps/cluster-info`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      if ((await statusWithToken(url, token, caCert)) === 401)
        throw new KubeadmError(`the bootstrap token was rejected by ${endpoint} (HTTP 401): it is unknown or expired`);
      return;
    } catch (err) {
      // A certificate the pinned CA did not sign is no endpoint of this cluster: no retry makes it one.
      if (
        (err as NodeJS.ErrnoException).code?.startsWith?.('ERR_TLS') ||
        /certificate|self.signed/i.test((err as Error).message)
      ) {
        throw new KubeadmError(
          `${endpoint} did not present a certificate of the pinned cluster CA: ${(err as Error).message}`,
        );
      }
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

/** `kubeadm join --config FILE` of a worker, given the config file's and the machine metadata's text and the cluster CA: the kubelet registration to write. */
export async function joinWorker(
  configText: string,
  metadataText: string,
  caCert: string,
): Promise<KubeletRegistration> {
  const docs = parseKubeadmConfig(configText);
  const meta = JSON.parse(metadataText) as MachineMetadata;
  await checkToken(joinEndpoint(docs), docs.join?.discovery?.bootstrapToken, caCert);
  return kubeletRegistration(meta, docs.join?.nodeRegistration, false);
}
