import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Logger } from 'pino';
import type { ServingCertificate } from '../pki/webhook-serving';
import { MalformedReviewError } from './admission-review';

/** An object is at most 1.5 MiB in etcd and a review carries two (object and oldObject), with room to spare. */
export const maxReviewBytes = 4 << 20;
/** Longer than this and the answer would come after the apiserver gave up (the configuration asks for 5 s). */
export const decisionTimeoutMs = 4_000;

/**
 * What one path of the server answers: the request's body (read and bounded) in, the JSON to send back out.
 * A MalformedReviewError is answered with a 400 and its message.
 */
export type WebhookRoute = (body: string) => Promise<object>;

export interface AdmissionWebhook {
  /** Where the apiserver calls it (`https://HOST:PORT`): a route's URL is this and its path. */
  url: string;
  /** The PEM certificate of the authority that signed the serving certificate: the configuration's caBundle. */
  caBundle: string;
  /** How many requests `path` has answered (what the registration waits for). */
  answered(path: string): number;
  /** How many requests were refused for not coming from the apiserver (no client certificate its authority issued). */
  refused(): number;
  /** Serves `serving`'s certificate from the next connection on, and checks callers against `clientCa` if it checked any. */
  renew(serving: ServingCertificate, clientCa?: string): void;
  close(): Promise<void>;
}

class RequestError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The body, refused past `maxReviewBytes` as it arrives (a Content-Length that says so is refused unread). */
function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const tooLarge = () => new RequestError(413, `an AdmissionReview is at most ${maxReviewBytes} bytes`);
    if (Number(req.headers['content-length'] ?? 0) > maxReviewBytes) return reject(tooLarge());
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxReviewBytes) {
        req.removeAllListeners('data');
        req.resume();
        reject(tooLarge());
      } else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** The refusal of a caller whose connection carries no client certificate the server's authority issued, or undefined. */
function callerRefusal(socket: TLSSocket): RequestError | undefined {
  if (socket.authorized) return undefined;
  if (Object.keys(socket.getPeerCertificate()).length === 0)
    return new RequestError(
      401,
      'only the apiserver may call this webhook: present the client certificate capt issued it',
    );
  return new RequestError(
    403,
    `only the apiserver may call this webhook: this client certificate was not issued by its authority (${String(socket.authorizationError)})`,
  );
}

function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new RequestError(503, `capt did not decide within ${ms} ms`)), ms);
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}

const send = (res: ServerResponse, status: number, body: object) => {
  const text = JSON.stringify(body);
  // After an error the rest of a body may still be on its way: the connection is not reused.
  const close = status === 200 ? {} : { Connection: 'close' };
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), ...close });
  res.end(text);
};

/**
 * Serves the webhooks (a route per path) on `host`:`port` over HTTPS with `serving`'s certificate. Every
 * request is bounded: its body, the time to send it, the time to decide. What is not a review gets a 400.
 * With `clientCa`, a path not in `anyCaller` answers only a caller whose client certificate that authority
 * issued (401 without one, 403 with another); the TLS handshake cannot refuse them, as `anyCaller`'s come
 * without one. Without it, any caller is answered.
 */
export async function startAdmissionWebhook(opts: {
  host: string;
  port: number;
  serving: ServingCertificate;
  routes: Record<string, WebhookRoute>;
  clientCa?: string;
  anyCaller?: string[];
  log: Logger;
}): Promise<AdmissionWebhook> {
  const { serving, clientCa } = opts;
  const answered = new Map<string, number>();
  let refused = 0;
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    try {
      const path = new URL(req.url ?? '/', 'https://webhook').pathname;
      const route = Object.hasOwn(opts.routes, path) ? opts.routes[path] : undefined;
      if (!route) throw new RequestError(404, `not found: post to ${Object.keys(opts.routes).join(' or ')}`);
      const refusal = clientCa && !opts.anyCaller?.includes(path) && callerRefusal(req.socket as TLSSocket);
      if (refusal) {
        refused += 1;
        throw refusal;
      }
      if (req.method !== 'POST') throw new RequestError(405, 'POST an AdmissionReview');
      const answer = await withDeadline(route(await readBody(req)), decisionTimeoutMs);
      answered.set(path, (answered.get(path) ?? 0) + 1);
      send(res, 200, answer);
    } catch (err) {
      const status = err instanceof RequestError ? err.status : err instanceof MalformedReviewError ? 400 : 500;
      if (status >= 500) opts.log.warn({ err }, 'admission: no decision');
      send(res, status, { message: (err as Error).message });
    }
  };
  const server: Server = createServer(
    {
      cert: serving.cert,
      key: serving.key,
      ...(clientCa ? { requestCert: true, rejectUnauthorized: false, ca: clientCa } : {}),
    },
    (req, res) => void handle(req, res),
  );
  // A slow sender cannot hold a connection: the apiserver sends a review at once and waits at most 5 s.
  server.headersTimeout = 5_000;
  server.requestTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, resolve);
  });
  const { port } = server.address() as { port: number };
  return {
    url: `https://${isIP(opts.host) === 6 ? `[${opts.host}]` : opts.host}:${port}`,
    caBundle: serving.caBundle,
    answered: (path) => answered.get(path) ?? 0,
    refused: () => refused,
    renew: (next, nextClientCa) =>
      server.setSecureContext({
        cert: next.cert,
        key: next.key,
        ...(clientCa ? { ca: nextClientCa ?? clientCa } : {}),
      }),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
