import { connect, type Socket } from 'node:net';

/**
 * Connects a client to one of `backends` (host:port), the next in turn by `turn()`, skipping one that refuses the
 * connection for the one after it; the client is destroyed when none accepts. The client is paused until then, so
 * nothing it sends is lost; `connected` gets the open upstream and the backend it reached.
 */
export function dialRoundRobin(
  client: Socket,
  backends: readonly string[],
  turn: () => number,
  connected: (upstream: Socket, backend: string) => void,
  attempt = 0,
): void {
  if (backends.length === 0 || attempt >= backends.length) return void client.destroy();
  const backend = backends[turn() % backends.length]!;
  const [host, port] = backend.split(':') as [string, string];
  client.pause();
  const upstream = connect(Number(port), host);
  upstream.once('error', () => {
    upstream.destroy();
    if (!client.destroyed) dialRoundRobin(client, backends, turn, connected, attempt + 1);
  });
  upstream.once('connect', () => {
    upstream.removeAllListeners('error');
    // The client went while this connected: nothing to carry.
    if (client.destroyed) return void upstream.destroy();
    connected(upstream, backend);
  });
}
