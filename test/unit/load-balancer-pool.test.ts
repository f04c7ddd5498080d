import assert from 'node:assert/strict';
import { Agent, createServer, request, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { ApiserverLoadBalancer } from '../../providers/local/load-balancer';
import { createCertificateAuthority, issueCertificate } from '../../src/pki/certificates';
import { freePort } from '../../src/util/free-port';
import { until } from '../fixtures/until';

/** Real TLS backends on loopback that answer every request, /readyz included, with 200. */
async function backends(count: number): Promise<{ addresses: string[]; close: () => Promise<void> }> {
  const ca = await createCertificateAuthority('lb-test');
  const pair = await issueCertificate(ca, { commonName: 'lb-test', ipAddresses: ['127.0.0.1'], usage: 'server' });
  const servers: Server[] = [];
  for (let i = 0; i < count; i++) {
    const server = createServer({ cert: pair.cert, key: pair.key }, (_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
  }
  return {
    addresses: servers.map((s) => `127.0.0.1:${(s.address() as AddressInfo).port}`),
    close: async () => {
      for (const s of servers) {
        s.closeAllConnections();
        await new Promise((resolve) => s.close(resolve));
      }
    },
  };
}

test('the endpoint pool: a backend taken out leaves service at the next check, and its kept-alive connection is drained and published', async () => {
  const { addresses, close } = await backends(2);
  let listed = [...addresses];
  let changes = 0;
  const lb = new ApiserverLoadBalancer(
    async () => listed,
    () => changes++,
  );
  const port = await freePort('127.0.0.1');
  await lb.listen('127.0.0.1', port);
  const agent = new Agent({ keepAlive: true, rejectUnauthorized: false });
  try {
    await lb.checkBackends();
    assert.deepEqual(lb.pool(), { inService: addresses, leaving: {} });
    // One kept-alive connection, to the first backend in service (round robin starts there).
    let socketClosed = false;
    const status = await new Promise<number>((resolve, reject) =>
      request({ host: '127.0.0.1', port, path: '/version', agent }, (res) => {
        res.socket.once('close', () => (socketClosed = true));
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      })
        .on('error', reject)
        .end(),
    );
    assert.equal(status, 200);
    assert.deepEqual(lb.pool().leaving, {}, 'connections to backends in service are not counted');

    const before = changes;
    listed = [addresses[1]!];
    await lb.checkBackends();
    assert.deepEqual(lb.pool(), { inService: [addresses[1]], leaving: { [addresses[0]!]: 1 } });
    // The connection is idle between requests, so it is closed within a drain tick or two, and the pool says so.
    await until('the leaving backend’s connection to be drained', async () =>
      Object.keys(lb.pool().leaving).length === 0 ? true : undefined,
    );
    assert.ok(changes > before, 'the pool change was announced for publishing');
    await until('the client’s kept-alive connection to close', () => socketClosed || undefined, { timeoutMs: 3000 });
    // Closed at the balancer's end too, not left half-open: its server closes only once no connection is left.
    const closing = lb.close().then(() => 'closed');
    const bound = new Promise((resolve) => setTimeout(resolve, 3000, 'still open').unref());
    assert.equal(await Promise.race([closing, bound]), 'closed');
  } finally {
    agent.destroy();
    await lb.close();
    await close();
  }
});
