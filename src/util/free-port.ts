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

/**
 * CAPT_PORT_RANGE=LOW-HIGH confines the ports capt picks for the servers it starts, so homes (or test lanes) that
 * run side by side never pick the same port between choosing it and binding it.
 */
export function portRange(env: NodeJS.ProcessEnv = process.env): { low: number; high: number } | undefined {
  const text = env.CAPT_PORT_RANGE;
  if (text === undefined || text === '') return undefined;
  const match = /^(\d{1,5})-(\d{1,5})$/.exec(text);
  const [low, high] = match ? [Number(match[1]), Number(match[2])] : [NaN, NaN];
  if (!(low >= 1024 && low <= high && high <= 65535))
    throw new Error(
      `CAPT_PORT_RANGE=${JSON.stringify(text)} is not a port range: write LOW-HIGH with 1024 <= LOW <= HIGH <= 65535, for example 20000-24999, or unset it`,
    );
  return { low, high };
}

// The ports this process handed out last, whose servers may not listen yet: picks close together never repeat one.
const handedOut = new Set<number>();
const rememberedPicks = 64;
// Ports named by configuration for servers not started yet: no pick in this process returns one.
const reserved = new Set<number>();

/**
 * Keeps every later pick in this process off `ports`, which configuration assigns to servers that may not listen yet
 * (a dev stack's CAPT_DEV_PORT, say): otherwise one of its own picks could take the port first.
 */
export function reservePorts(ports: Iterable<number>): void {
  for (const port of ports) reserved.add(port);
}

/** A free port in [`low`, `high`] (within CAPT_PORT_RANGE), for programs that cannot take the kernel's picks. */
export async function freePortBetween(low: number, high: number, host = '127.0.0.1'): Promise<number> {
  const range = portRange();
  const [from, to] = range ? [Math.max(low, range.low), Math.min(high, range.high)] : [low, high];
  if (from > to)
    throw new Error(
      `CAPT_PORT_RANGE=${process.env.CAPT_PORT_RANGE} leaves no port between ${low} and ${high}: widen it to overlap that span`,
    );
  for (let attempt = 0; attempt < 100; attempt++) {
    const candidate = from + Math.floor(Math.random() * (to - from + 1));
    if (handedOut.has(candidate) || reserved.has(candidate)) continue;
    const port = await bindable(host, candidate).catch(() => undefined);
    if (port) {
      handedOut.add(port);
      if (handedOut.size > rememberedPicks) handedOut.delete(handedOut.values().next().value!);
      return port;
    }
  }
  throw new Error(`no free TCP port between ${from} and ${to} on ${host} after 100 tries`);
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
