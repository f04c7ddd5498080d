import { createServer, type Server, type Socket } from 'node:net';
import { dialRoundRobin } from '../../src/util/round-robin-dial';
import { httpsGet } from '../../src/util/https-probe';

/**
 * The control-plane endpoint: a TCP load balancer that forwards to the kube-apiservers that answer
 * /readyz, round robin. Backends come from a callback so it follows machines as they join and leave.
 */
/** One client connection forwarded to a backend. */
interface Pipe {
  backend: string;
  client: Socket;
  upstream: Socket;
  /** When bytes last came from the client and from the backend: a request is in flight while the client's are newer. */
  lastClient: number;
  lastUpstream: number;
  draining: boolean;
  /** The balancer closed its side: the client sees the connection end and sends no more on it. */
  ended?: boolean;
}

/** What the endpoint forwards to: the backends in service, and the connections any other still carries. */
export interface EndpointPool {
  inService: string[];
  leaving: Record<string, number>;
}

/** A /readyz slower than this counts as a failed check: a stopping apiserver must leave the pool fast. */
const probeTimeoutMs = 1000;

export class ApiserverLoadBalancer {
  private healthy: string[] = [];
  private next = 0;
  private server?: Server;
  private readonly pipes = new Set<Pipe>();
  /** Backends in service, and how many checks in a row each has failed. */
  private readonly up = new Set<string>();
  private readonly failures = new Map<string, number>();

  /**
   * @param poolChanged called when the backends in service change or a connection opens or closes, so the
   *   pool can be published to whoever waits for a machine to leave.
   */
  constructor(
    private readonly backends: () => Promise<string[]>,
    private readonly poolChanged: () => void = () => undefined,
  ) {}

  listen(host: string, port: number): Promise<void> {
    this.server = createServer((client) => this.forward(client));
    return new Promise((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, host, () => resolve());
    });
  }

  /**
   * Probes every backend once; anonymous /readyz is allowed by Kubernetes' default RBAC. As load balancers
   * do (rise 1, fall 2), one passed check puts a backend in service and two failed in a row take it out,
   * so a single slow answer on a busy host does not empty the pool; a backend no longer listed goes at once.
   */
  async checkBackends(): Promise<void> {
    const candidates = await this.backends();
    const results = await Promise.all(
      candidates.map((b) =>
        httpsGet(`https://${b}/readyz`, { insecure: true }, probeTimeoutMs).then(
          (r) => r.status === 200,
          () => false,
        ),
      ),
    );
    candidates.forEach((b, i) => {
      const failed = results[i] ? 0 : (this.failures.get(b) ?? 0) + 1;
      this.failures.set(b, failed);
      if (failed === 0) this.up.add(b);
      else if (failed >= 2) this.up.delete(b);
    });
    for (const b of [...this.up, ...this.failures.keys()]) {
      if (candidates.includes(b)) continue;
      this.up.delete(b);
      this.failures.delete(b);
    }
    this.healthy = candidates.filter((b) => this.up.has(b));
    this.poolChanged();
    // With no healthy backend left, closing connections to the ones that failed their checks helps no client.
    if (this.healthy.length === 0) return;
    for (const pipe of this.pipes) if (!this.healthy.includes(pipe.backend)) this.drain(pipe);
  }

  /**
   * A backend that left (taken out of the endpoint, or unhealthy) keeps no client: each of its kept-alive
   * connections is closed once idle between requests (the backend answered last, 50 ms ago), so the
   * client's next request opens a connection to a healthy backend instead of reaching an apiserver that
   * is shutting down. A connection never idle (a watch) is closed after 10 s.
   */
  private drain(pipe: Pipe): void {
    if (pipe.draining) return;
    pipe.draining = true;
    const giveUpAt = Date.now() + 10_000;
    const timer = setInterval(() => {
      const idle = pipe.lastUpstream >= pipe.lastClient && Date.now() - pipe.lastUpstream >= 50;
      if (!idle && Date.now() < giveUpAt) return;
      clearInterval(timer);
      pipe.ended = true;
      this.poolChanged();
      // Unpiped and read on to each peer's end, so both sockets close: left piped, ending one side paused the
      // other and both stayed half-open for the process's life. A peer that never ends is cut off after 5 s.
      pipe.client.unpipe(pipe.upstream);
      pipe.upstream.unpipe(pipe.client);
      pipe.client.end();
      pipe.upstream.end();
      pipe.client.resume();
      pipe.upstream.resume();
      setTimeout(() => {
        pipe.client.destroy();
        pipe.upstream.destroy();
      }, 5_000).unref();
    }, 20);
    pipe.client.once('close', () => clearInterval(timer));
  }

  /** Connects the client to a healthy backend; a backend that refuses the connection is skipped for the next. */
  private forward(client: Socket): void {
    dialRoundRobin(
      client,
      this.healthy,
      () => this.next++,
      (upstream, backend) => {
        const pipe: Pipe = { backend, client, upstream, lastClient: 0, lastUpstream: Date.now(), draining: false };
        this.pipes.add(pipe);
        this.poolChanged();
        client.on('data', () => (pipe.lastClient = Date.now()));
        upstream.on('data', () => (pipe.lastUpstream = Date.now()));
        client.pipe(upstream).pipe(client);
        client.resume();
        // One side closing ends the other gracefully, so a response still buffered for the client is delivered
        // (destroying it cut kept-alive responses short: "Premature close" on a loaded host); errors end both.
        const closed = () => {
          if (this.pipes.delete(pipe)) this.poolChanged();
        };
        const fail = () => {
          closed();
          client.destroy();
          upstream.destroy();
        };
        client.on('error', fail);
        upstream.on('error', fail);
        client.on('close', () => {
          closed();
          upstream.end();
        });
        upstream.on('close', () => {
          closed();
          client.end();
        });
      },
    );
  }

  /**
   * What a leaving machine waits on: connections to backends out of service that the balancer has not closed
   * yet (busy ones, watches); connections to backends in service are left out, so they churn unseen.
   */
  pool(): EndpointPool {
    const leaving: Record<string, number> = {};
    for (const { backend, ended } of this.pipes)
      if (!ended && !this.healthy.includes(backend)) leaving[backend] = (leaving[backend] ?? 0) + 1;
    return { inService: [...this.healthy], leaving };
  }

  close(): Promise<void> {
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
