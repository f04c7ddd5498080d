import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { test } from 'node:test';
import { createCertificateAuthority, issueCertificate } from '../../src/pki/certificates';
import { httpsGet } from '../../src/util/https-probe';

/** A real TLS server that answers `answered(n)` requests on each connection and resets the connection on the next. */
async function serverResetting(
  answered: (nth: number) => boolean,
): Promise<{ url: string; requests: () => number; connections: () => number; close: () => Promise<void> }> {
  const ca = await createCertificateAuthority('probe-test');
  const pair = await issueCertificate(ca, { commonName: 'probe-test', ipAddresses: ['127.0.0.1'], usage: 'server' });
  const seen = new WeakMap<Socket, number>();
  let requests = 0;
  let connections = 0;
  const server: Server = createServer({ cert: pair.cert, key: pair.key }, (req, res) => {
    requests++;
    const nth = (seen.get(req.socket) ?? 0) + 1;
    seen.set(req.socket, nth);
    if (answered(nth)) res.end('ok');
    else req.socket.destroy();
  });
  server.on('secureConnection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://127.0.0.1:${port}/readyz`,
    requests: () => requests,
    connections: () => connections,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

test('httpsGet: a kept-alive connection reset as the request goes out is retried once on a new one; a new connection reset is an error', async () => {
  const drains = await serverResetting((nth) => nth === 1);
  try {
    assert.equal((await httpsGet(drains.url, { insecure: true })).status, 200);
    // The second request goes out on the kept-alive connection, which the server resets: retried on a new one.
    assert.equal((await httpsGet(drains.url, { insecure: true })).status, 200);
    assert.equal(drains.requests(), 3, 'the reset request was sent again, once');
    assert.equal(drains.connections(), 2);
  } finally {
    await drains.close();
  }
  const broken = await serverResetting(() => false);
  try {
    await assert.rejects(
      httpsGet(broken.url, { insecure: true }),
      (err: NodeJS.ErrnoException) => err.code === 'ECONNRESET',
    );
    assert.equal(broken.requests(), 1, 'a reset on a new connection is not retried: it is a failure to report');
  } finally {
    await broken.close();
  }
});
