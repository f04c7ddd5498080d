import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Payload, PayloadCodec } from '@temporalio/common';

/**
 * Temporal's remote codec protocol over HTTP, for the Web UI and `temporal --codec-endpoint`: POST /encode
 * and /decode take and return `{"payloads": [...]}` in the proto JSON form (bytes as base64). The browser
 * calls it from the UI's origin with credentials, so CORS answers only the origins given, by name. The
 * X-Namespace header is accepted and not needed: one set of keys serves every namespace.
 */
export interface CodecServerOptions {
  host: string;
  port: number;
  /** Origins of Web UIs allowed to call from a browser, e.g. http://127.0.0.1:8233. */
  corsOrigins: string[];
  codec: PayloadCodec;
}

export interface RunningCodecServer {
  url: string;
  close(): Promise<void>;
}

/** Where `capt codec-server` and `capt dev` listen unless told otherwise (the port Temporal's guides use). */
export const defaultCodecPort = 8888;

/** Histories of a few MiB per payload are the most Temporal keeps; more is not a codec request. */
const maxBodyBytes = 64 << 20;
export const codecAllowedHeaders = 'content-type, x-namespace, authorization';

class BadRequest extends Error {}

interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}

const fromJson = (p: JsonPayload): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
  data: Buffer.from(p.data ?? '', 'base64'),
});

const toJson = (p: Payload): JsonPayload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  data: Buffer.from(p.data ?? []).toString('base64'),
});

function payloadsOf(body: string): Payload[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new BadRequest('the body is not JSON; expected {"payloads": [{"metadata": {...}, "data": "..."}]}');
  }
  const payloads = (parsed as { payloads?: unknown })?.payloads;
  if (!Array.isArray(payloads)) throw new BadRequest('expected {"payloads": [...]}');
  const valid = payloads.every((p: JsonPayload) => typeof p === 'object' && p !== null && (p.data === undefined || typeof p.data === 'string')
    && Object.values(p.metadata ?? {}).every((v) => typeof v === 'string'));
  if (!valid) throw new BadRequest('each payload is {"metadata": {NAME: BASE64}, "data": BASE64}');
  return (payloads as JsonPayload[]).map(fromJson);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBodyBytes) throw new BadRequest(`the body is over ${maxBodyBytes >> 20} MiB`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The CORS headers for `origin`, when it is one of the allowed; none otherwise. */
function corsHeaders(origin: string | undefined, allowed: string[]): Record<string, string> {
  if (!origin || !allowed.includes(origin)) return {};
  return { 'access-control-allow-origin': origin, 'access-control-allow-credentials': 'true', vary: 'Origin' };
}

async function handle(req: IncomingMessage, res: ServerResponse, opts: CodecServerOptions): Promise<void> {
  const cors = corsHeaders(req.headers.origin, opts.corsOrigins);
  const reply = (status: number, body: string, type = 'text/plain; charset=utf-8') => {
    res.writeHead(status, { ...cors, 'content-type': type });
    res.end(body);
  };
  const path = new URL(req.url ?? '/', 'http://codec').pathname;
  const operation = path === '/encode' ? 'encode' : path === '/decode' ? 'decode' : undefined;
  if (!operation) return reply(404, `no ${path} here: POST /encode or /decode\n`);
  if (req.method === 'OPTIONS') {
    if (!cors['access-control-allow-origin']) return reply(403, `origin ${req.headers.origin ?? '(none)'} is not allowed; start the codec server with --cors-origin ${req.headers.origin ?? 'ORIGIN'}\n`);
    res.writeHead(204, { ...cors, 'access-control-allow-methods': 'POST, OPTIONS', 'access-control-allow-headers': codecAllowedHeaders, 'access-control-max-age': '600' });
    return void res.end();
  }
  if (req.method !== 'POST') return reply(405, `${req.method} ${path}: use POST\n`);
  try {
    const payloads = payloadsOf(await readBody(req));
    const result = await opts.codec[operation](payloads);
    reply(200, JSON.stringify({ payloads: result.map(toJson) }), 'application/json');
  } catch (err) {
    // A payload that does not decrypt is the request's problem too: the message says which key and why.
    reply(400, `${(err as Error).message}\n`);
  }
}

/** Listens on host:port (port 0: any free one) and returns once it does. */
export async function startCodecServer(opts: CodecServerOptions): Promise<RunningCodecServer> {
  const server = createServer((req, res) => void handle(req, res, opts));
  server.listen(opts.port, opts.host);
  await Promise.race([once(server, 'listening'), once(server, 'error').then(([err]) => {
    throw new Error(`the codec server cannot listen on ${opts.host}:${opts.port}: ${(err as Error).message}`);
  })]);
  const { address, port } = server.address() as AddressInfo;
  return {
    url: `http://${address.includes(':') ? `[${address}]` : address}:${port}`,
    close: () => new Promise<void>((resolve, reject) => {
      server.close((err) => (err ? reject(err) : resolve()));
      server.closeAllConnections();
    }),
  };
}
