import { createServer } from 'node:net';

/** Whether a server can listen on `host`:`port` right now: the port, or a rejection. */
function bindable(host: string, port: number): Promise<number> {
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
    const port = await bindable(host, candidate).catch(() => undefined);
    if (port) return port;
  }
  throw new Error(`no free TCP port between ${low} and ${high} on ${host} after 100 tries`);
}

/**
 * A TCP port on `host` that nothing listens on right now, for a server bound later (often by another process):
 * `port` when that is free, else one below 32768. The kernel hands outgoing connections their source ports from
 * 32768 up (ip_local_port_range), so a port picked there may be held by any connection before the server binds it
 * (a test's Temporal UI and kube-apiserver both once were); below it only servers bind, and they check first.
 */
export function freePort(host = '127.0.0.1', port?: number): Promise<number> {
  return port === undefined ? freePortBetween(10_000, 32_767, host) : bindable(host, port);
}
