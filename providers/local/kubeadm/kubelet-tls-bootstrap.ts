import { request } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { certificateSigningRequest } from '../../../src/pki/certificate-request';
import { newPrivateKey, type KeyPair } from '../../../src/pki/certificates';
import { hasStatus, type KubeletApi } from '../kubelet/kube-api';
import { parseKubeadmConfig } from './kubeadm-config';
import { discoveryAgent, joinEndpoint, KubeadmError } from './worker-join';

/** The group kubeadm's bootstrap tokens put their holder in (the token Secret's auth-extra-groups). */
export const nodeBootstrappers = 'system:bootstrappers:kubeadm:default-node-token';

/**
 * kubeadm's bindings for the kubelets' TLS bootstrap (`kubeadm init` makes them; here the cluster agent does, so
 * clusters made before capt made them get them too): a bootstrap token may ask for a node client certificate, and
 * the controller-manager approves such requests on its own.
 */
const kubeletBootstrapBindings: [name: string, clusterRole: string][] = [
  ['kubeadm:kubelet-bootstrap', 'system:node-bootstrapper'],
  ['kubeadm:node-autoapprove-bootstrap', 'system:certificates.k8s.io:certificatesigningrequests:nodeclient'],
];

/** Get-or-create of kubeadm's bootstrap bindings, with the cluster agent's admin credentials. */
export async function ensureKubeletBootstrapBindings(api: KubeletApi): Promise<void> {
  for (const [name, clusterRole] of kubeletBootstrapBindings)
    await api
      .call('POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterRole },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: nodeBootstrappers }],
      })
      .catch((err: unknown) => {
        if (!hasStatus(err, 409)) throw err;
      });
}

const csrPath = '/apis/certificates.k8s.io/v1/certificatesigningrequests';
/** The controller-manager approves and signs within a second or two; a slow one is waited for this long. */
const signedWithinMs = 120_000;

interface Csr {
  metadata: { name: string };
  status?: { certificate?: string; conditions?: { type: string; message?: string }[] };
}

/** A JSON request to the endpoint with the bootstrap token, trusting only the cluster CA. */
function withToken(method: string, url: string, token: string, caCert: string, body?: unknown): Promise<Csr> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method,
        agent: discoveryAgent,
        ca: caCert,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json' },
        timeout: 10_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if ((res.statusCode ?? 0) >= 300)
            return reject(new KubeadmError(`${method} ${url}: HTTP ${res.statusCode}: ${text.slice(0, 300)}`));
          try {
            resolve(JSON.parse(text) as Csr);
          } catch {
            reject(new KubeadmError(`${method} ${url}: an answer that is not JSON`));
          }
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/**
 * The kubelet's TLS bootstrap, as `kubeadm join` leaves it to the kubelet: a new key, a CertificateSigningRequest
 * for `system:node:<node>` sent with the bootstrap token, approved and signed by the cluster's controller-manager.
 * Returns the key and the certificate the cluster issued (the kubelet's kubelet-client-current.pem).
 */
export async function kubeletClientCertificate(
  endpoint: string,
  token: string,
  caCert: string,
  nodeName: string,
): Promise<KeyPair> {
  const key = newPrivateKey();
  const csr = certificateSigningRequest(key, `system:node:${nodeName}`, ['system:nodes']);
  const base = `https://${endpoint}${csrPath}`;
  const created = await withToken('POST', base, token, caCert, {
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
    metadata: { generateName: 'node-csr-' },
    spec: {
      request: Buffer.from(csr).toString('base64'),
      signerName: 'kubernetes.io/kube-apiserver-client-kubelet',
      usages: ['digital signature', 'client auth'],
    },
  });
  const name = created.metadata.name;
  const deadline = Date.now() + signedWithinMs;
  for (;;) {
    const got = await withToken('GET', `${base}/${name}`, token, caCert);
    if (got.status?.certificate) return { cert: Buffer.from(got.status.certificate, 'base64').toString('utf8'), key };
    const refused = got.status?.conditions?.find((c) => c.type === 'Denied' || c.type === 'Failed');
    if (refused)
      throw new KubeadmError(`the kubelet's certificate request ${name} was ${refused.type}: ${refused.message ?? ''}`);
    if (Date.now() > deadline)
      throw new KubeadmError(
        `the kubelet's certificate request ${name} was not signed within ${signedWithinMs / 1000} s: is the controller-manager running?`,
      );
    await sleep(250);
  }
}

/**
 * The kubelet's TLS bootstrap for a worker the cluster agent joined: `allowBootstrap` makes sure the cluster has
 * kubeadm's bindings (a cluster made before capt made them has not), then the certificate is asked for with the
 * join configuration's endpoint and bootstrap token.
 */
export async function bootstrapKubeletClient(
  configText: string,
  caCert: string,
  nodeName: string,
  allowBootstrap: () => Promise<void>,
): Promise<KeyPair> {
  const docs = parseKubeadmConfig(configText);
  await allowBootstrap();
  return kubeletClientCertificate(joinEndpoint(docs), docs.join!.discovery!.bootstrapToken!.token!, caCert, nodeName);
}
