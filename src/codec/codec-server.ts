import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { isIP, type AddressInfo } from 'node:net';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { tokenMatches } from './codec-token';

/**
 * Temporal's remote codec protocol over HTTP, for the Web UI and `temporal --codec-endpoint`: POST /encode
 * and /decode take and return `{"payloads": [...]}` in the proto JSON form (bytes as base64). It decrypts
 * for whoever presents its token, so every request must: `Authorization: Bearer TOKEN` (the temporal CLI's
 * `--codec-auth`), or the cookie `GET /login?token=TOKEN` sets for a browser (a Web UI sending credentials).
 * Requests naming another Host (DNS rebinding) or, from a browser, an Origin not allowed are refused. The
 * browser calls from the UI's origin with credentials, so CORS answers only the origins given, by name. The
 * X-Namespace header is accepted and not needed: one set of keys serves every namespace.
 */
export interface CodecServerOptions {
  host: string;
  port: number;
  /** Origins of Web UIs allowed to call from a browser, e.g. http://127.0.0.1:8233. */
  corsOrigins: string[];
  codec: PayloadCodec;
  /** The credential every /encode and /decode must present (codec-token.ts). */
  token: string;
  /** Host names besides the address it listens on (and, on loopback, localhost) that callers may use. */
  hostNames?: string[];
}

export interface RunningCodecServer {
  url: string;
  close(): Promise<void>;
}

/** Where `capt codec-server` and `capt dev` listen unless told otherwise (the port Temporal's guides use). */
export const defaultCodecPort = 8888;

/** A gRPC message is at most 4 MiB, so no history page the UI decodes is bigger. */
const maxBodyBytes = 4 << 20;
/** Requests decoded at once; more wait for none and get 503, so a flood cannot exhaust memory. */
const maxInFlight = 16;
export const codecAllowedHeaders = 'content-type, x-namespace, authorization';
/** The cookie /login sets, which a Web UI sending credentials presents. */
export const codecCookie = 'capt_codec_token';

class Refused extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}

const fromJson = (p: JsonPayload): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
  data: Buffer.from(p.data ?? '', 'base64'),
});

const toJson = (p: Payload): JsonPayload => ({
  metadata: Object.fromEntries(
    Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
  ),
  data: Buffer.from(p.data ?? []).toString('base64'),
});

function payloadsOf(body: string): Payload[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new Refused(400, 'the body is not JSON; expected {"payloads": [{"metadata": {...}, "data": "..."}]}');
  }
  const payloads = (parsed as { payloads?: unknown })?.payloads;
  if (!Array.isArray(payloads)) throw new Refused(400, 'expected {"payloads": [...]}');
  const valid = payloads.every(
    (p: JsonPayload) =>
      typeof p === 'object' &&
      p !== null &&
      (p.data === undefined || typeof p.data === 'string') &&
      (p.metadata === undefined ||
        (typeof p.metadata === 'object' &&
          p.metadata !== null &&
          Object.values(p.metadata).every((v) => typeof v === 'string'))),
  );
  if (!valid) throw new Refused(400, 'each payload is {"metadata": {NAME: BASE64}, "data": BASE64}');
  return (payloads as JsonPayload[]).map(fromJson);
}

async function readBody(req: IncomingMessage): Promise<string> {
  if (Number(req.headers['content-length'] ?? 0) > maxBodyBytes)
    throw new Refused(413, `the body is over ${maxBodyBytes >> 20} MiB`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBodyBytes) throw new Refused(413, `the body is over ${maxBodyBytes >> 20} MiB`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The CORS headers for `origin`, when it is one of the allowed; none otherwise. */
function corsHeaders(origin: string | undefined, allowed: string[]): Record<string, string> {
  if (!origin || !allowed.includes(origin)) return {};
  return { 'access-control-allow-origin': origin, 'access-control-allow-credentials': 'true', vary: 'Origin' };
}

const cookieToken = (header: string | undefined) =>
  header
    ?.split(';')
    .map((c) => c.trim().split('='))
    .find(([name]) => name === codecCookie)?.[1];
const bearerToken = (header: string | undefined) => /^Bearer\s+(\S+)$/i.exec(header ?? '')?.[1];

/** The Host values a caller may use: the listening address, loopback names on loopback, and the names given. */
function allowedHosts(opts: CodecServerOptions, port: number): Set<string> {
  const names = [opts.host, ...(opts.hostNames ?? [])];
  if (['127.0.0.1', '::1', 'localhost'].includes(opts.host)) names.push('127.0.0.1', 'localhost', '::1');
  return new Set(names.map((n) => `${isIP(n) === 6 ? `[${n}]` : n}:${port}`.toLowerCase()));
}

interface Context {
  opts: CodecServerOptions;
  hosts: Set<string>;
  inFlight: number;
}

async function handle(req: IncomingMessage, res: ServerResponse, ctx: Context): Promise<void> {
  const { opts } = ctx;
  const cors = corsHeaders(req.headers.origin, opts.corsOrigins);
  const reply = (status: number, body: string, headers: Record<string, string> = {}) => {
    res.writeHead(status, { ...cors, 'content-type': 'text/plain; charset=utf-8', ...headers });
    res.end(body);
  };
  const host = (req.headers.host ?? '').toLowerCase();
  if (!ctx.hosts.has(host))
    return reply(421, `Host ${JSON.stringify(host)} is not this codec server's; use ${[...ctx.hosts][0]}\n`);
  if (req.headers.origin !== undefined && !cors['access-control-allow-origin']) {
    return reply(
      403,
      `origin ${req.headers.origin} is not allowed; start the codec server with --cors-origin ${req.headers.origin}\n`,
    );
  }
  const url = new URL(req.url ?? '/', 'http://codec');
  if (url.pathname === '/login' && req.method === 'GET') {
    const token = url.searchParams.get('token') ?? undefined;
    if (!tokenMatches(token, opts.token))
      return reply(
        401,
        "wrong or missing token: open /login?token=TOKEN with the token in the codec server's token file\n",
      );
    const next = opts.corsOrigins[0];
    res.writeHead(next ? 303 : 200, {
      'set-cookie': `${codecCookie}=${token}; HttpOnly; SameSite=Strict; Path=/`,
      ...(next ? { location: next } : {}),
      'content-type': 'text/plain; charset=utf-8',
    });
    return void res.end('this browser may now have payloads decoded\n');
  }
  const operation = url.pathname === '/encode' ? 'encode' : url.pathname === '/decode' ? 'decode' : undefined;
  if (!operation) return reply(404, `no ${url.pathname} here: POST /encode or /decode\n`);
  if (req.method === 'OPTIONS') {
    if (!cors['access-control-allow-origin'])
      return reply(
        403,
        `origin ${req.headers.origin ?? '(none)'} is not allowed; start the codec server with --cors-origin ${req.headers.origin ?? 'ORIGIN'}\n`,
      );
    res.writeHead(204, {
      ...cors,
      'access-control-allow-methods': 'POST, OPTIONS',
      'access-control-allow-headers': codecAllowedHeaders,
      'access-control-max-age': '600',
    });
    return void res.end();
  }
  if (req.method !== 'POST') return reply(405, `${req.method} ${url.pathname}: use POST\n`);
  if (!tokenMatches(bearerToken(req.headers.authorization) ?? cookieToken(req.headers.cookie), opts.token)) {
    return reply(
      401,
      'the codec server decodes only for its operators: send Authorization: Bearer TOKEN (temporal --codec-auth "Bearer TOKEN"), TOKEN from its token file\n',
      { 'www-authenticate': 'Bearer' },
    );
  }
  if (ctx.inFlight >= maxInFlight)
    return reply(503, `busy: ${maxInFlight} requests are being decoded; try again\n`, { 'retry-after': '1' });
  ctx.inFlight++;
  try {
    const payloads = payloadsOf(await readBody(req));
    const result = await opts.codec[operation](payloads);
    reply(200, JSON.stringify({ payloads: result.map(toJson) }), { 'content-type': 'application/json' });
  } finally {
    ctx.inFlight--;
  }
}

/** Listens on host:port (port 0: any free one) and returns once it does. No request, however malformed, ends it. */
export async function startCodecServer(opts: CodecServerOptions): Promise<RunningCodecServer> {
  const ctx: Context = { opts, hosts: new Set(), inFlight: 0 };
  const server = createServer(
    { requestTimeout: 30_000, headersTimeout: 10_000, maxHeaderSize: 16 << 10 },
    (req, res) => {
      handle(req, res, ctx).catch((err: Error) => {
        // A payload that does not decrypt is the request's problem too: the message says which key and why.
        const status = err instanceof Refused ? err.status : 400;
        if (res.headersSent) return void res.destroy();
        res.writeHead(status, {
          'content-type': 'text/plain; charset=utf-8',
          ...corsHeaders(req.headers.origin, opts.corsOrigins),
        });
        res.end(`${err.message}\n`);
      });
    },
  );
  server.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    else socket.destroy();
  });
  server.listen(opts.port, opts.host);
  await Promise.race([
    once(server, 'listening'),
    once(server, 'error').then(([err]) => {
      throw new Error(`the codec server cannot listen on ${opts.host}:${opts.port}: ${(err as Error).message}`);
    }),
  ]);
  const { address, port } = server.address() as AddressInfo;
  ctx.hosts = allowedHosts(opts, port);
  return {
    url: `http://${address.includes(':') ? `[${address}]` : address}:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}
