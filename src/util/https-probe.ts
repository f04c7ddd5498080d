import { request } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';

/** Client TLS settings: mutual TLS with a CA, or `insecure` for anonymous probes of endpoints whose CA is unknown. */
export type ClientTLS = { ca: string; cert: string; key: string } | { insecure: true };

/**
 * One GET over mutual TLS; resolves with the status code and body, rejects on connection errors. A kept-alive
 * connection the server (or a load balancer draining it) closed just as the request went out is retried once
 * on a new connection, as Go's and browsers' clients do: the request never reached a server.
 */
export function httpsGet(url: string, tls: ClientTLS, timeoutMs = 2000): Promise<{ status: number; body: string }> {
  return getOnce(url, tls, timeoutMs, false);
}

function getOnce(
  url: string,
  tls: ClientTLS,
  timeoutMs: number,
  retried: boolean,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const options = 'insecure' in tls ? { rejectUnauthorized: false } : tls;
    const req = request(url, { ...options, timeout: timeoutMs, ...(retried ? { agent: false } : {}) }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from ${url} within ${timeoutMs} ms`)));
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (req.reusedSocket && err.code === 'ECONNRESET' && !retried)
        getOnce(url, tls, timeoutMs, true).then(resolve, reject);
      else reject(err);
    });
    req.end();
  });
}

/**
 * Polls `url` until it answers 200 or `timeoutMs` passes; `onWait` hears each failed probe so callers can
 * heartbeat. Rejects with the last answer, which usually names the failing check.
 */
export async function waitForOk(
  url: string,
  tls: ClientTLS,
  timeoutMs: number,
  onWait?: (last: string) => void,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer yet';
  while (Date.now() < deadline) {
    try {
      const res = await httpsGet(url, tls);
      if (res.status === 200) return;
      last = `HTTP ${res.status}: ${res.body.slice(0, 500)}`;
    } catch (err) {
      last = (err as Error).message;
    }
    onWait?.(last);
    await sleep(250);
  }
  throw new Error(`${url} did not become ready within ${timeoutMs} ms; last answer: ${last}`);
}
