import { ApiException, CoreV1Api, KubeConfig, type V1ConfigMap, type V1Namespace } from '@kubernetes/client-node';

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
export const isConflict = (err: unknown) => err instanceof KubeError && err.status === 409;

function translate(err: unknown, what: string): never {
  if (err instanceof ApiException) {
    const code = (err as ApiException<unknown>).code;
    let status: { message?: string; reason?: string } = {};
    try {
      const body = (err as ApiException<unknown>).body;
      status = typeof body === 'string' ? JSON.parse(body) : (body as typeof status);
    } catch {
      // Non-JSON bodies (proxies, early TLS failures) keep the generic message below.
    }
    throw new KubeError(`${what}: ${status.message ?? `HTTP ${code}`}`, code, status.reason ?? 'Unknown');
  }
  throw err;
}

export class KubeClient {
  private readonly core: CoreV1Api;

  constructor(kubeconfig: string) {
    const kc = new KubeConfig();
    kc.loadFromString(kubeconfig);
    this.core = kc.makeApiClient(CoreV1Api);
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
