import { Agent, request } from 'node:https';
import { kubeconfigCredentials } from '../../../src/pki/kubeconfig';

/** An apiserver answer other than 2xx. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

export const hasStatus = (err: unknown, ...statuses: number[]) =>
  err instanceof ApiError && statuses.includes(err.status);

/**
 * The REST calls of the simulated kubelets, over kept-alive TLS connections. @kubernetes/client-node makes
 * a new agent, so a new TLS handshake, per request: a lease renewal cost 9 ms of the agent's CPU and 5 ms
 * of the server's that way, 0.3 ms each over a kept-alive connection; at 1000 nodes that is most of two cores.
 */
export class KubeletApi {
  private readonly agent: Agent;
  private readonly server: URL;

  /** Watches hold their connection: their own agent, so they never take one of the calls' sockets. */
  private readonly watchAgent: Agent;

  constructor(kubeconfig: string, maxSockets: number) {
    const { server, ca, cert, key } = kubeconfigCredentials(kubeconfig);
    this.server = new URL(server);
    this.agent = new Agent({ keepAlive: true, maxSockets, ca, cert, key });
    this.watchAgent = new Agent({ ca, cert, key });
  }

  /** Where and how a request of the simulated kubelets goes: the apiserver, over `agent`, as the kubelets. */
  private target(path: string, agent: Agent, timeout: number, headers: Record<string, string | number> = {}) {
    const { hostname: host, port } = this.server;
    return {
      host,
      port: port || 443,
      path,
      agent,
      timeout,
      headers: { accept: 'application/json', 'user-agent': 'capt-simulated-kubelet', ...headers },
    };
  }

  /**
   * A watch: calls `onLine` with each line of the answer (an event) until the apiserver ends it; rejects with
   * ApiError on a non-2xx answer, or when nothing arrived for `idleMs` (a watch with bookmarks is never that quiet).
   */
  stream(path: string, onLine: (line: string) => void, idleMs = 90_000): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const req = request(this.target(path, this.watchAgent, idleMs), (res) => {
        const status = res.statusCode ?? 0;
        if (status < 200 || status >= 300) {
          res.resume();
          return reject(new ApiError(`GET ${path}: HTTP ${status}`, status));
        }
        let pending = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          const lines = (pending + chunk).split('\n');
          pending = lines.pop()!;
          try {
            for (const line of lines) if (line.trim()) onLine(line);
          } catch (err) {
            req.destroy(err as Error);
          }
        });
        res.on('end', () => resolve());
        res.on('error', reject);
      });
      req.on('timeout', () => req.destroy(new Error(`GET ${path}: nothing within ${idleMs / 1000} s`)));
      req.on('error', reject);
      req.end();
    });
  }

  /** One request; resolves with the decoded answer of a 2xx, rejects with ApiError (the Status message) otherwise. */
  call<T>(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<T> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise<T>((resolve, reject) => {
      // Content-Length always: Node frames no body for DELETE by default, and the apiserver would read the
      // DeleteOptions as the next request on the kept-alive connection (HTTP 400 for every call after it).
      const framing: Record<string, string | number> =
        payload === undefined ? {} : { 'content-type': contentType, 'content-length': Buffer.byteLength(payload) };
      const req = request({ ...this.target(path, this.agent, 15_000, framing), method }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          let decoded: unknown;
          try {
            decoded = JSON.parse(text);
          } catch {
            decoded = undefined;
          }
          if (status >= 200 && status < 300) return resolve(decoded as T);
          const message = (decoded as { message?: string } | undefined)?.message ?? `HTTP ${status}`;
          reject(new ApiError(`${method} ${path}: ${message}`, status));
        });
        res.on('error', reject);
      });
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer within 15 s`)));
      req.on('error', reject);
      req.end(payload);
    });
  }
}
