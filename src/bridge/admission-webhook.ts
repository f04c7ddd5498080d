import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { createCertificateAuthority, issueCertificate } from '../pki/certificates';
import {
  admissionResponse,
  MalformedReviewError,
  parseAdmissionReview,
  type AdmissionRequest,
} from './admission-review';

/** Where the apiserver posts its AdmissionReviews. */
export const admissionPath = '/validate';
/** An object is at most 1.5 MiB in etcd and a review carries two (object and oldObject), with room to spare. */
export const maxReviewBytes = 4 << 20;
/** Longer than this and the answer would come after the apiserver gave up (the configuration asks for 5 s). */
export const decisionTimeoutMs = 4_000;

export interface AdmissionWebhook {
  /** The URL the apiserver calls. */
  url: string;
  /** The PEM certificate of the authority that signed the serving certificate: the configuration's caBundle. */
  caBundle: string;
  /** How many reviews it has answered (what the registration waits for). */
  answered(): number;
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
function readBody(req: IncomingMessage, review: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const tooLarge = () => new RequestError(413, `${review} is at most ${maxReviewBytes} bytes`);
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

/** One path the webhook server answers: the review it takes (`an AdmissionReview`, for messages) and its answer. */
export interface ReviewRoute {
  review: string;
  answer: (body: string) => Promise<object>;
}

/**
 * Serves the validating admission webhook, and the other `routes` given (the conversion webhook), on
 * `host`:`port` over HTTPS, with a certificate authority and serving certificate made at each start and kept
 * in memory only (the registration carries the authority, so nothing secret is stored and a restarted bridge
 * simply registers its new one). Every request is bounded: its body, the time to send it, the time to answer.
 * What is not the review its path takes gets a 400.
 */
export async function startAdmissionWebhook(opts: {
  host: string;
  port: number;
  decide: (request: AdmissionRequest) => Promise<string | undefined>;
  log: Logger;
  routes?: Record<string, ReviewRoute>;
}): Promise<AdmissionWebhook> {
  const ca = await createCertificateAuthority('capt-admission-webhook-ca');
  const serving = await issueCertificate(ca, {
    commonName: 'capt-admission-webhook',
    ipAddresses: [opts.host],
    dnsNames: ['localhost'],
    usage: 'server',
  });
  let answered = 0;
  const validate = async (body: string) => {
    const request = parseAdmissionReview(body);
    const refusal = await opts.decide(request);
    answered++;
    // The object only: a refusal quotes values from the request.
    const object = `${request.object?.kind} ${request.object?.metadata.namespace}/${request.object?.metadata.name}`;
    if (refusal) opts.log.info({ uid: request.uid, object }, 'admission: refused');
    return admissionResponse(request.uid, refusal);
  };
  const routes: Record<string, ReviewRoute> = {
    [admissionPath]: { review: 'an AdmissionReview', answer: validate },
    ...opts.routes,
  };
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    try {
      const path = new URL(req.url ?? '/', 'https://webhook').pathname;
      const route = Object.hasOwn(routes, path) ? routes[path] : undefined;
      if (!route) throw new RequestError(404, `not found: reviews go to ${Object.keys(routes).join(', ')}`);
      if (req.method !== 'POST') throw new RequestError(405, `POST ${route.review}`);
      send(res, 200, await withDeadline(route.answer(await readBody(req, route.review)), decisionTimeoutMs));
    } catch (err) {
      const status = err instanceof RequestError ? err.status : err instanceof MalformedReviewError ? 400 : 500;
      if (status >= 500) opts.log.warn({ err }, 'webhook: no answer');
      send(res, status, { message: (err as Error).message });
    }
  };
  const server: Server = createServer({ cert: serving.cert, key: serving.key }, (req, res) => void handle(req, res));
  // A slow sender cannot hold a connection: the apiserver sends a review at once and waits at most 5 s.
  server.headersTimeout = 5_000;
  server.requestTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, resolve);
  });
  const { port } = server.address() as { port: number };
  return {
    url: `https://${opts.host}:${port}${admissionPath}`,
    caBundle: ca.cert,
    answered: () => answered,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
