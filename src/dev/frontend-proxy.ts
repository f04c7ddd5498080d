import { createServer, type Server, type Socket } from 'node:net';
import { dialRoundRobin } from '../util/round-robin-dial';

/**
 * The one address capt's clients and workers dial when Temporal runs as several server processes
 * (`capt dev start --persistence postgres --temporal-nodes N`): a TCP proxy to the nodes' frontends, round robin,
 * skipping a frontend that refuses the connection. gRPC keeps its connections open; when a node dies they break,
 * and the client's reconnect lands on a node still up. Temporal's own deployments put a load balancer there.
 */
export class FrontendProxy {
  private server?: Server;
  private next = 0;
  private readonly open = new Set<Socket>();

  constructor(private readonly frontends: string[]) {
    if (!frontends.length) throw new Error('the frontend proxy needs at least one frontend (host:port)');
  }

  listen(host: string, port: number): Promise<void> {
    this.server = createServer((client) => this.forward(client));
    return new Promise((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, host, () => resolve());
    });
  }

  private forward(client: Socket): void {
    dialRoundRobin(
      client,
      this.frontends,
      () => this.next++,
      (upstream) => {
        this.open.add(client).add(upstream);
        client.pipe(upstream).pipe(client);
        client.resume();
        // Either side failing or closing takes the other with it: the client reconnects through the proxy.
        const close = () => {
          this.open.delete(client);
          this.open.delete(upstream);
          client.destroy();
          upstream.destroy();
        };
        for (const s of [client, upstream]) s.once('error', close).once('close', close);
      },
    );
    client.once('error', () => client.destroy());
  }

  async close(): Promise<void> {
    for (const s of this.open) s.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
