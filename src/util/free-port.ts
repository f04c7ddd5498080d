import { createServer } from 'node:net';

/** A TCP port on `host` that nothing listens on right now: the kernel's pick, or `port` when that is free. */
export function freePort(host = '127.0.0.1', port = 0): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(port, host, () => {
      const { port: bound } = server.address() as { port: number };
      server.close(() => resolve(bound));
    });
  });
}

/** A free port in [`low`, `high`] on `host`, for programs that cannot take the kernel's picks (above 32767 here). */
export async function freePortBetween(low: number, high: number, host = '127.0.0.1'): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const candidate = low + Math.floor(Math.random() * (high - low + 1));
    const port = await freePort(host, candidate).catch(() => undefined);
    if (port) return port;
  }
  throw new Error(`no free TCP port between ${low} and ${high} on ${host} after 100 tries`);
}

/**
 * A free port for a server that another process binds later. The kernel hands outgoing connections source ports
 * from 32768 up (ip_local_port_range), so a port picked there may be taken by any connection before the server
 * binds it (a test's Temporal UI once was); below that only servers bind, and they check first.
 */
export const freeServerPort = (host = '127.0.0.1') => freePortBetween(10_000, 32_767, host);
