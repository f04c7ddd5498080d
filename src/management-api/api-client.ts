import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request, type AgentOptions } from 'node:https';

type Json = Record<string, unknown>;

export interface ObjectRef {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
}

/** The REST path of an object (or, without a name, of its collection); every kind used here pluralises with an s. */
export function objectPath(ref: Omit<ObjectRef, 'name'> & { name?: string }): string {
  const base = ref.apiVersion.includes('/') ? `/apis/${ref.apiVersion}` : `/api/${ref.apiVersion}`;
  const ns = ref.namespace ? `/namespaces/${ref.namespace}` : '';
  // Kubernetes' plural of a kind: ClusterClass is served as clusterclasses.
  const kind = ref.kind.toLowerCase();
  return `${base}${ns}/${kind}${kind.endsWith('s') ? 'es' : 's'}${ref.name ? `/${ref.name}` : ''}`;
}

/** The REST path of an object's collection, or with `named` of the object. */
function pathOf(object: Json, named = false): string {
  const metadata = object.metadata as { name: string; namespace?: string };
  return objectPath({
    apiVersion: object.apiVersion as string,
    kind: object.kind as string,
    namespace: metadata.namespace,
    ...(named ? { name: metadata.name } : {}),
  });
}

/**
 * A small JSON client for a management apiserver over mutual TLS with kept-alive connections: the
 * benchmark's driver reads one status object per wait step, so a client library's per-request handshakes
 * would be the larger cost.
 */
export class ManagementApi {
  private readonly agent: Agent;

  /** `headers` carry a bearer token or impersonation when the credentials are not a client certificate. */
  constructor(
    private readonly server: string,
    tls: Pick<AgentOptions, 'ca' | 'cert' | 'key' | 'rejectUnauthorized' | 'servername'>,
    private readonly authHeaders: Record<string, string> = {},
  ) {
    this.agent = new Agent({ ...tls, keepAlive: true, maxSockets: 4 });
  }

  /** A client for the current context of a kubeconfig, whatever its credentials (certificate, token, exec plugin). */
  static async fromKubeconfig(text: string): Promise<ManagementApi> {
    // Loaded here: every capt command imports this module, and the library alone took half of `capt apply`'s
    // start (0.4 of 0.8 s), for the few commands that read a kubeconfig.
    const { KubeConfig } = await import('@kubernetes/client-node');
    const config = new KubeConfig();
    config.loadFromString(text);
    const server = config.getCurrentCluster()?.server;
    if (!server) throw new Error(`the kubeconfig's current context '${config.getCurrentContext()}' names no cluster`);
    // Basic authentication is left out: Kubernetes removed it in 1.19.
    const options: { headers?: Record<string, string> } & AgentOptions = {};
    await config.applyToHTTPSOptions(options);
    return new ManagementApi(server, options, options.headers);
  }

  private send(
    method: string,
    path: string,
    body?: unknown,
    contentType = 'application/json',
    timeoutMs = 30_000,
    accept = 'application/json',
  ): Promise<{ status: number; json: Json; text: string; bytes: Buffer }> {
    return new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const headers = {
        ...this.authHeaders,
        Accept: accept,
        ...(payload ? { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(payload) } : {}),
      };
      const req = request(
        `${this.server}${path}`,
        { method, agent: this.agent, headers, timeout: timeoutMs },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            const bytes = Buffer.concat(chunks);
            const text = bytes.toString('utf8');
            let json: Json;
            try {
              json = JSON.parse(text) as Json;
            } catch {
              json = { message: text };
            }
            resolve({ status: res.statusCode ?? 0, json, text, bytes });
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer within ${timeoutMs / 1000} s`)));
      req.on('error', reject);
      req.end(payload);
    });
  }

  private async expect(
    method: string,
    path: string,
    ok: number[],
    body?: unknown,
    contentType?: string,
  ): Promise<Json> {
    const { status, json } = await this.send(method, path, body, contentType);
    if (!ok.includes(status)) throw new Error(`${method} ${path}: ${status} ${String(json.message ?? '')}`);
    return json;
  }

  /** The object, or undefined when it does not exist. */
  async get(path: string): Promise<Json | undefined> {
    const { status, json } = await this.send('GET', path);
    if (status === 404) return undefined;
    if (status !== 200) throw new Error(`GET ${path}: ${status} ${String(json.message ?? '')}`);
    return json;
  }

  /** The metadata of every object of a collection, without the rest of them (a list of CRDs is megabytes whole). */
  async listMetadata(path: string): Promise<{ name: string; annotations?: Record<string, string> }[]> {
    const accept = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';
    const { status, json } = await this.send('GET', path, undefined, undefined, 30_000, accept);
    if (status !== 200) throw new Error(`GET ${path}: ${status} ${String(json.message ?? '')}`);
    // An empty list's items are null.
    const items = (json.items ?? []) as { metadata: { name: string; annotations?: Record<string, string> } }[];
    return items.map((i) => i.metadata);
  }

  /** A non-JSON page, such as the apiserver's /metrics. */
  async getText(path: string): Promise<string> {
    const { status, text } = await this.send('GET', path);
    if (status !== 200) throw new Error(`GET ${path}: ${status} ${text.slice(0, 200)}`);
    return text;
  }

  /** A binary page that takes up to `timeoutMs` to answer, such as a pprof CPU profile. */
  async getBytes(path: string, timeoutMs: number): Promise<Buffer> {
    const { status, text, bytes } = await this.send('GET', path, undefined, undefined, timeoutMs);
    if (status !== 200) throw new Error(`GET ${path}: ${status} ${text.slice(0, 200)}`);
    return bytes;
  }

  /** Creates the object; one that exists already is left as it is (the management cluster is new for each run). */
  async create(object: Json): Promise<void> {
    await this.expect('POST', pathOf(object), [201, 409], object);
  }

  /** A server-side dry run of creating the object (admission runs, nothing is stored): the HTTP status. */
  async dryRunCreate(object: Json): Promise<number> {
    return (await this.send('POST', `${pathOf(object)}?dryRun=All`, object)).status;
  }

  /**
   * Server-side apply as `fieldManager`, taking over fields others set: creates or updates, so it can be repeated,
   * and is, when the apiserver is busy or its etcd slow to answer (429, 5xx: a loaded host's `etcdserver: request
   * timed out`), up to five times a second or more apart.
   */
  async apply(object: Json, fieldManager: string): Promise<Json> {
    const path = `${pathOf(object, true)}?fieldManager=${encodeURIComponent(fieldManager)}&force=true`;
    for (let attempt = 1; ; attempt++) {
      const { status, json } = await this.send('PATCH', path, object, 'application/apply-patch+yaml');
      if (status === 200 || status === 201) return json;
      if (attempt === 5 || (status !== 429 && status < 500))
        throw new Error(`PATCH ${path}: ${status} ${String(json.message ?? '')}`);
      await sleep(1000 * attempt);
    }
  }

  async mergePatch(path: string, patch: Json): Promise<void> {
    await this.expect('PATCH', path, [200], patch, 'application/merge-patch+json');
  }

  /** Deleting what is gone succeeds. */
  async delete(path: string): Promise<void> {
    await this.expect('DELETE', path, [200, 202, 404]);
  }

  close(): void {
    this.agent.destroy();
  }
}
