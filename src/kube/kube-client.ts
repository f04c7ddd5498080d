import { request as httpRequest } from 'node:http';
import { Agent, request as httpsRequest } from 'node:https';
import {
  ApiException,
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  createConfiguration,
  KubeConfig,
  ListWatch,
  PatchStrategy,
  ResponseContext,
  ServerConfiguration,
  setHeaderOptions,
  Watch,
  wrapHttpLibrary,
  type CoreV1Event,
  type RequestContext,
  type V1ConfigMap,
  type V1Namespace,
  type V1Node,
  type V1Pod,
  type V1ResourceQuota,
  type V1Secret,
} from '@kubernetes/client-node';

/**
 * client-node makes a new https.Agent, so a new TLS handshake, for every request (about 9 ms of CPU here
 * and 5 ms in the apiserver); this one keeps its first agent's options and reuses kept-alive connections.
 */
class KeepAliveKubeConfig extends KubeConfig {
  private agent?: Agent;

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const made = context.getAgent();
    if (!(made instanceof Agent)) return;
    this.agent ??= new Agent({ ...made.options, keepAlive: true, maxSockets: 16 });
    context.setAgent(this.agent);
  }
}

/**
 * client-node's requests over Node's own http(s), not node-fetch: on a kept-alive socket already serving
 * the next request, node-fetch's check for a cut chunked response misfires and fails a finished response
 * with "Premature close" (2,277 drain and Node-wait attempts failed so in one 1000-machine run).
 */
const nodeHttp = wrapHttpLibrary({
  send(context) {
    return new Promise((resolve, reject) => {
      const url = new URL(context.getUrl());
      const options = {
        method: context.getHttpMethod().toString(),
        headers: context.getHeaders(),
        agent: context.getAgent(),
        signal: context.getSignal(),
      };
      const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, options, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const data = Buffer.concat(chunks);
          const headers = Object.fromEntries(
            Object.entries(res.headers).flatMap(([k, v]) =>
              v === undefined ? [] : [[k, Array.isArray(v) ? v.join(', ') : v]],
            ),
          );
          resolve(
            new ResponseContext(res.statusCode ?? 0, headers, {
              text: async () => data.toString('utf8'),
              binary: async () => data,
            }),
          );
        });
      });
      req.on('error', reject);
      const body = context.getBody();
      if (body !== undefined) req.write(typeof body === 'string' ? body : String(body));
      req.end();
    });
  },
});

// Merge patches need their content type set explicitly; the generated client defaults to JSON patch.
export const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/**
 * The one module that talks to a workload cluster's apiserver through @kubernetes/client-node. It returns
 * plain results and typed errors, so the library's quirks (raw JSON error bodies, per-call request
 * objects) stay here.
 */
export class KubeError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly reason: string,
  ) {
    super(message);
    this.name = 'KubeError';
  }
}

export const isNotFound = (err: unknown) => err instanceof KubeError && err.status === 404;

interface ApiStatus {
  message?: string;
  reason?: string;
  details?: { causes?: { reason?: string; message?: string }[] };
}

/** Error bodies arrive as raw JSON strings (or already parsed, depending on the path taken). */
function parseStatus(err: ApiException<unknown>): ApiStatus {
  try {
    return (typeof err.body === 'string' ? JSON.parse(err.body) : err.body) as ApiStatus;
  } catch {
    return {};
  }
}

export function translate(err: unknown, what: string): never {
  if (err instanceof ApiException) {
    const status = parseStatus(err);
    throw new KubeError(`${what}: ${status.message ?? `HTTP ${err.code}`}`, err.code, status.reason ?? 'Unknown');
  }
  throw err;
}

/** client-node's configuration for an apiserver, with kept-alive connections over Node's own http(s). */
export function kubeApiConfiguration(kubeconfig: string) {
  const kc = new KeepAliveKubeConfig();
  kc.loadFromString(kubeconfig);
  const configuration = createConfiguration({
    baseServer: new ServerConfiguration(kc.getCurrentCluster()!.server, {}),
    authMethods: { default: kc },
    httpApi: nodeHttp,
  });
  return { kc: kc as KubeConfig, configuration };
}

export class KubeClient {
  private readonly kc: KubeConfig;
  private readonly core: CoreV1Api;
  private readonly coordination: CoordinationV1Api;
  private readonly apps: AppsV1Api;

  constructor(kubeconfig: string) {
    const { kc, configuration } = kubeApiConfiguration(kubeconfig);
    this.kc = kc;
    this.core = new CoreV1Api(configuration);
    this.coordination = new CoordinationV1Api(configuration);
    this.apps = new AppsV1Api(configuration);
  }

  /** Marks the node unschedulable; already cordoned is fine. */
  async cordon(name: string): Promise<void> {
    await this.patchNode(name, { spec: { unschedulable: true } });
  }

  async podsOnNode(nodeName: string): Promise<V1Pod[]> {
    return this.listPods(`spec.nodeName=${nodeName}`);
  }

  async daemonSetExists(namespace: string, name: string): Promise<boolean> {
    try {
      await this.apps.readNamespacedDaemonSet({ namespace, name });
      return true;
    } catch (err) {
      if (err instanceof ApiException && err.code === 404) return false;
      translate(err, `reading daemonset ${namespace}/${name}`);
    }
  }

  /**
   * Evicts through the Eviction API (policy/v1), honouring disruption budgets. Resolves 'evicted' (or
   * 'gone'), or 'blocked' with the apiserver's explanation when a budget says no (HTTP 429).
   */
  async evict(
    namespace: string,
    name: string,
    gracePeriodSeconds?: number,
  ): Promise<{ outcome: 'evicted' | 'gone' } | { outcome: 'blocked'; message: string }> {
    try {
      await this.core.createNamespacedPodEviction({
        namespace,
        name,
        body: {
          apiVersion: 'policy/v1',
          kind: 'Eviction',
          metadata: { namespace, name },
          ...(gracePeriodSeconds !== undefined ? { deleteOptions: { gracePeriodSeconds } } : {}),
        },
      });
      return { outcome: 'evicted' };
    } catch (err) {
      if (err instanceof ApiException && err.code === 404) return { outcome: 'gone' };
      if (err instanceof ApiException && err.code === 429) {
        const status = parseStatus(err);
        const causes = (status.details?.causes ?? []).map((c) => c.message).filter(Boolean);
        return {
          outcome: 'blocked',
          message: [status.message, ...causes].filter(Boolean).join(' ') || 'eviction refused (HTTP 429)',
        };
      }
      translate(err, `evicting pod ${namespace}/${name}`);
    }
  }

  /** InternalIPs of the control-plane Nodes: where stacked etcd members and apiservers listen. */
  async controlPlaneAddresses(): Promise<string[]> {
    try {
      const nodes = await this.core.listNode({ labelSelector: 'node-role.kubernetes.io/control-plane' });
      return nodes.items.flatMap((n) =>
        (n.status?.addresses ?? []).filter((a) => a.type === 'InternalIP').map((a) => a.address),
      );
    } catch (err) {
      translate(err, 'listing control-plane nodes');
    }
  }

  async getNode(name: string): Promise<V1Node | undefined> {
    try {
      return await this.core.readNode({ name });
    } catch (err) {
      if (err instanceof ApiException && err.code === 404) return undefined;
      translate(err, `reading node ${name}`);
    }
  }

  async listNodes(): Promise<V1Node[]> {
    try {
      return (await this.core.listNode()).items;
    } catch (err) {
      translate(err, 'listing nodes');
    }
  }

  /**
   * Lists the Nodes, then watches them from that list's resourceVersion (client-node's ListWatch): the
   * apiserver sends each change once instead of every Node on every poll. The watch stops on an error;
   * start() resumes it (from the last resourceVersion, or a fresh list when that has expired).
   */
  watchNodes(on: {
    change: (node: V1Node) => void;
    deleted: (node: V1Node) => void;
    error: (err: unknown) => void;
  }): ListWatch<V1Node> {
    const watch = new ListWatch<V1Node>('/api/v1/nodes', new Watch(this.kc), () => this.core.listNode(), false);
    watch.on('add', on.change);
    watch.on('update', on.change);
    watch.on('delete', on.deleted);
    watch.on('error', on.error);
    return watch;
  }

  /** Create-if-missing; an existing Node is kept as it is (a restarted kubelet re-registers the same way). */
  async registerNode(node: V1Node): Promise<V1Node> {
    try {
      return await this.core.createNode({ body: node });
    } catch (err) {
      if (err instanceof ApiException && err.code === 409) return this.core.readNode({ name: node.metadata!.name! });
      translate(err, `registering node ${node.metadata?.name}`);
    }
  }

  async patchNode(name: string, patch: object): Promise<void> {
    try {
      await this.core.patchNode({ name, body: patch }, mergePatch);
    } catch (err) {
      translate(err, `patching node ${name}`);
    }
  }

  async patchNodeStatus(name: string, patch: object): Promise<void> {
    try {
      await this.core.patchNodeStatus({ name, body: patch }, mergePatch);
    } catch (err) {
      translate(err, `updating status of node ${name}`);
    }
  }

  /** Deleting a Node that is already gone succeeds. */
  async deleteNode(name: string): Promise<void> {
    try {
      await this.core.deleteNode({ name });
    } catch (err) {
      if (!(err instanceof ApiException && err.code === 404)) translate(err, `deleting node ${name}`);
    }
  }

  /** Renews (or creates) the node's heartbeat Lease in kube-node-lease. */
  async renewNodeLease(nodeName: string, holder: string, durationSeconds: number): Promise<void> {
    const namespace = 'kube-node-lease';
    // Lease times are MicroTime: the apiserver insists on six fractional digits.
    const now = new Date().toISOString().replace(/\.(\d{3})Z$/, '.$1000Z') as unknown as Date;
    try {
      const lease = await this.coordination.readNamespacedLease({ namespace, name: nodeName });
      lease.spec = { ...lease.spec, holderIdentity: holder, leaseDurationSeconds: durationSeconds, renewTime: now };
      await this.coordination.replaceNamespacedLease({ namespace, name: nodeName, body: lease });
    } catch (err) {
      if (!(err instanceof ApiException && err.code === 404)) translate(err, `renewing lease of node ${nodeName}`);
      try {
        await this.coordination.createNamespacedLease({
          namespace,
          body: {
            metadata: { name: nodeName },
            spec: { holderIdentity: holder, leaseDurationSeconds: durationSeconds, renewTime: now },
          },
        });
      } catch (createErr) {
        if (!(createErr instanceof ApiException && createErr.code === 409))
          translate(createErr, `creating lease of node ${nodeName}`);
      }
    }
  }

  async listPods(fieldSelector?: string): Promise<V1Pod[]> {
    try {
      return (await this.core.listPodForAllNamespaces({ fieldSelector })).items;
    } catch (err) {
      translate(err, 'listing pods');
    }
  }

  /** Events of one namespace, e.g. `involvedObject.kind=Pod,involvedObject.name=NAME` (at most `limit`). */
  async listEvents(namespace: string, fieldSelector: string, limit = 50): Promise<CoreV1Event[]> {
    try {
      return (await this.core.listNamespacedEvent({ namespace, fieldSelector, limit })).items;
    } catch (err) {
      translate(err, `listing events in ${namespace}`);
    }
  }

  async patchPodStatus(namespace: string, name: string, patch: object): Promise<void> {
    try {
      await this.core.patchNamespacedPodStatus({ namespace, name, body: patch }, mergePatch);
    } catch (err) {
      if (!(err instanceof ApiException && err.code === 404))
        translate(err, `updating status of pod ${namespace}/${name}`);
    }
  }

  /** Removes a pod whose termination finished, as the kubelet does once its containers stopped. Gone is success. */
  async deletePodNow(namespace: string, name: string, uid: string): Promise<void> {
    try {
      // A body's DeleteOptions replace the query's, so the grace period must be in the body.
      await this.core.deleteNamespacedPod({ namespace, name, body: { gracePeriodSeconds: 0, preconditions: { uid } } });
    } catch (err) {
      if (!(err instanceof ApiException && (err.code === 404 || err.code === 409)))
        translate(err, `deleting pod ${namespace}/${name}`);
    }
  }

  /** `namespace/name` of every Secret matching `fieldSelector`, in every namespace. */
  async secretNames(fieldSelector: string): Promise<string[]> {
    try {
      const list = await this.core.listSecretForAllNamespaces({ fieldSelector });
      return list.items.map((s) => `${s.metadata!.namespace}/${s.metadata!.name}`);
    } catch (err) {
      translate(err, `listing secrets (${fieldSelector})`);
    }
  }

  /** The namespace's ResourceQuotas, with what the quota controller counted as used. */
  async resourceQuotas(namespace: string): Promise<V1ResourceQuota[]> {
    try {
      return (await this.core.listNamespacedResourceQuota({ namespace })).items;
    } catch (err) {
      translate(err, `listing the resource quotas of namespace ${namespace}`);
    }
  }

  /** Get-or-create. */
  async ensureSecret(secret: V1Secret): Promise<void> {
    try {
      await this.core.createNamespacedSecret({ namespace: secret.metadata!.namespace!, body: secret });
    } catch (err) {
      if (!(err instanceof ApiException && err.code === 409))
        translate(err, `creating secret ${secret.metadata?.namespace}/${secret.metadata?.name}`);
    }
  }

  async ensureConfigMap(configMap: V1ConfigMap): Promise<void> {
    try {
      await this.core.createNamespacedConfigMap({ namespace: configMap.metadata!.namespace!, body: configMap });
    } catch (err) {
      if (!(err instanceof ApiException && err.code === 409))
        translate(err, `creating configmap ${configMap.metadata?.namespace}/${configMap.metadata?.name}`);
    }
  }

  /** Get-or-create. */
  async ensureNamespace(name: string, labels: Record<string, string> = {}): Promise<V1Namespace> {
    try {
      return await this.core.readNamespace({ name });
    } catch (err) {
      if (!(err instanceof ApiException && err.code === 404)) translate(err, `reading namespace ${name}`);
    }
    try {
      return await this.core.createNamespace({ body: { metadata: { name, labels } } });
    } catch (err) {
      if (err instanceof ApiException && err.code === 409) return this.core.readNamespace({ name });
      translate(err, `creating namespace ${name}`);
    }
  }

  /** A ConfigMap or Secret, or undefined when there is none of that name. */
  async findDataObject(
    kind: 'ConfigMap' | 'Secret',
    namespace: string,
    name: string,
  ): Promise<V1ConfigMap | V1Secret | undefined> {
    try {
      return kind === 'ConfigMap'
        ? await this.core.readNamespacedConfigMap({ namespace, name })
        : await this.core.readNamespacedSecret({ namespace, name });
    } catch (err) {
      if (err instanceof ApiException && err.code === 404) return undefined;
      translate(err, `reading ${kind.toLowerCase()} ${namespace}/${name}`);
    }
  }

  async getConfigMap(namespace: string, name: string): Promise<V1ConfigMap> {
    try {
      return await this.core.readNamespacedConfigMap({ namespace, name });
    } catch (err) {
      translate(err, `reading configmap ${namespace}/${name}`);
    }
  }

  /** Sets one key, creating the ConfigMap when it does not exist yet. */
  async setConfigMapKey(namespace: string, name: string, key: string, value: string): Promise<void> {
    try {
      const current = await this.core.readNamespacedConfigMap({ namespace, name });
      current.data = { ...current.data, [key]: value };
      await this.core.replaceNamespacedConfigMap({ namespace, name, body: current });
    } catch (err) {
      if (!(err instanceof ApiException && err.code === 404)) translate(err, `updating configmap ${namespace}/${name}`);
      try {
        await this.core.createNamespacedConfigMap({ namespace, body: { metadata: { name }, data: { [key]: value } } });
      } catch (createErr) {
        translate(createErr, `creating configmap ${namespace}/${name}`);
      }
    }
  }
}
