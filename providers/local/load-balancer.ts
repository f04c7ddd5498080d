import { connect, createServer, type Server, type Socket } from 'node:net';
import { httpsGet } from '../../src/util/https-probe';

/**
 * The control-plane endpoint: a TCP load balancer that forwards to the kube-apiservers that answer
 * /readyz, round robin. Backends come from a callback so it follows machines as they join and leave.
 */
export class ApiserverLoadBalancer {
  private healthy: string[] = [];
  private next = 0;
  private server?: Server;

  constructor(private readonly backends: () => Promise<string[]>) {}

  listen(host: string, port: number): Promise<void> {
    this.server = createServer((client) => this.forward(client));
    return new Promise((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, host, () => resolve());
    });
  }

  /** Probes every backend once; anonymous /readyz is allowed by Kubernetes' default RBAC. */
  async checkBackends(): Promise<void> {
    const candidates = await this.backends();
    const results = await Promise.all(
      candidates.map((b) => httpsGet(`https://${b}/readyz`, { insecure: true }, 1000).then((r) => r.status === 200, () => false)),
    );
    this.healthy = candidates.filter((_, i) => results[i]);
  }

  /** Connects the client to a healthy backend; a backend that refuses the connection is skipped for the next. */
  private forward(client: Socket, attempt = 0): void {
    if (this.healthy.length === 0 || attempt >= this.healthy.length) return void client.destroy();
    const [host, port] = this.healthy[this.next++ % this.healthy.length]!.split(':') as [string, string];
    client.pause();
    const upstream = connect(Number(port), host);
    upstream.once('error', () => {
      upstream.destroy();
      if (!client.destroyed) this.forward(client, attempt + 1);
    });
    upstream.once('connect', () => {
      upstream.removeAllListeners('error');
      client.pipe(upstream).pipe(client);
      client.resume();
      const close = () => { client.destroy(); upstream.destroy(); };
      client.on('error', close);
      upstream.on('error', close);
      client.on('close', close);
      upstream.on('close', close);
    });
  }

  close(): Promise<void> {
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
