import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, test } from 'node:test';
import { defaultPayloadConverter } from '@temporalio/common';
import { AesGcmCodec } from '../../src/codec/aes-gcm-codec';
import { codecKeyLine, newCodecKey, parseCodecKeys } from '../../src/codec/codec-keys';
import { startCodecServer, type RunningCodecServer } from '../../src/codec/codec-server';

const ui = 'http://127.0.0.1:8233';
const codec = new AesGcmCodec(parseCodecKeys(codecKeyLine(newCodecKey('k1')), 'the test key'));
const token = 'a-test-token-of-forty-characters-0123456';
const bearer = { authorization: `Bearer ${token}` };
let server: RunningCodecServer;

before(async () => {
  server = await startCodecServer({ host: '127.0.0.1', port: 0, corsOrigins: [ui], codec, token });
});
after(() => server.close());

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-namespace': 'default', ...bearer, ...headers },
    body: JSON.stringify(body),
  });

/** One raw HTTP/1.1 exchange, for what fetch will not send (another Host, a malformed request line). */
function raw(request: string): Promise<string> {
  const { port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () => socket.end(request));
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
  });
}

test('POST /encode and /decode speak the remote codec protocol: proto JSON payloads, bytes in base64', async () => {
  const payload = defaultPayloadConverter.toPayload({ name: 'plain' })!;
  const asJson = {
    metadata: { encoding: Buffer.from(payload.metadata!.encoding!).toString('base64') },
    data: Buffer.from(payload.data!).toString('base64'),
  };
  const encoded = await post('/encode', { payloads: [asJson] });
  assert.equal(encoded.status, 200);
  const sealed = (await encoded.json()) as { payloads: { metadata: Record<string, string>; data: string }[] };
  assert.equal(Buffer.from(sealed.payloads[0]!.metadata.encoding!, 'base64').toString(), 'binary/encrypted');
  assert.ok(!Buffer.from(sealed.payloads[0]!.data, 'base64').toString().includes('plain'));
  const decoded = await post('/decode', sealed, { origin: ui });
  assert.equal(decoded.status, 200);
  assert.equal(decoded.headers.get('access-control-allow-origin'), ui);
  assert.equal(decoded.headers.get('access-control-allow-credentials'), 'true');
  assert.deepEqual(await decoded.json(), { payloads: [asJson] });
});

test('CORS: a preflight from an allowed origin gets its origin, methods, headers and credentials back; any other origin gets none', async () => {
  const preflight = (origin: string) =>
    fetch(`${server.url}/decode`, {
      method: 'OPTIONS',
      headers: {
        origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type,x-namespace',
      },
    });
  const allowed = await preflight(ui);
  assert.equal(allowed.status, 204);
  assert.equal(allowed.headers.get('access-control-allow-origin'), ui);
  assert.equal(allowed.headers.get('access-control-allow-credentials'), 'true');
  assert.match(allowed.headers.get('access-control-allow-methods')!, /\bPOST\b/);
  assert.match(allowed.headers.get('access-control-allow-headers')!, /content-type.*x-namespace/);
  const other = await preflight('http://evil.example:8233');
  assert.equal(other.status, 403);
  assert.equal(other.headers.get('access-control-allow-origin'), null);
  assert.equal(
    (await post('/decode', { payloads: [] }, { origin: 'http://evil.example:8233' })).headers.get(
      'access-control-allow-origin',
    ),
    null,
  );
});

test('bad requests get 4xx with what is wrong: not JSON, a wrong shape, a payload of an unknown key, another path or method', async () => {
  const notJson = await fetch(`${server.url}/decode`, { method: 'POST', headers: bearer, body: 'payloads' });
  assert.deepEqual(
    [notJson.status, await notJson.text()],
    [400, 'the body is not JSON; expected {"payloads": [{"metadata": {...}, "data": "..."}]}\n'],
  );
  assert.equal((await post('/decode', { payload: [] })).status, 400);
  const foreign = await new AesGcmCodec(parseCodecKeys(codecKeyLine(newCodecKey('k9')), 'elsewhere')).encode([
    defaultPayloadConverter.toPayload(1)!,
  ]);
  const unknown = await post('/decode', {
    payloads: foreign.map((p) => ({
      metadata: Object.fromEntries(Object.entries(p.metadata!).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
      data: Buffer.from(p.data!).toString('base64'),
    })),
  });
  assert.equal(unknown.status, 400);
  assert.match(await unknown.text(), /encrypted with key 'k9', which this process does not have/);
  assert.equal((await post('/other', { payloads: [] })).status, 404);
  assert.equal((await fetch(`${server.url}/decode`)).status, 405);
});

test('only a caller with the token is answered: none, a wrong one, a garbage bearer are 401; a browser logs in once for a cookie', async () => {
  const sealed = { payloads: [] };
  for (const headers of [
    { authorization: '' },
    { authorization: 'Bearer wrong' },
    { authorization: 'Basic x' },
    { authorization: `Bearer ${token}x` },
  ]) {
    const refused = await post('/decode', sealed, headers);
    assert.equal(refused.status, 401, JSON.stringify(headers));
    assert.match(await refused.text(), /decodes only for its operators/);
  }
  assert.equal((await post('/encode', sealed, { authorization: '' })).status, 401, '/encode is no open oracle');
  assert.equal((await fetch(`${server.url}/login?token=wrong`, { redirect: 'manual' })).status, 401);
  const login = await fetch(`${server.url}/login?token=${token}`, { redirect: 'manual' });
  assert.equal(login.status, 303);
  assert.equal(login.headers.get('location'), ui);
  const cookie = login.headers.get('set-cookie')!;
  assert.match(cookie, /^capt_codec_token=[^;]+; HttpOnly; SameSite=Strict; Path=\/$/);
  assert.equal(
    (await post('/decode', sealed, { authorization: '', cookie: cookie.split(';')[0]!, origin: ui })).status,
    200,
    "the UI's request with the cookie",
  );
});

test('a foreign Host (DNS rebinding) or Origin is refused even with the token; a malformed request line or an oversized body changes nothing', async () => {
  const { port } = new URL(server.url);
  const rebound = await raw(
    `POST /decode HTTP/1.1\r\nHost: evil.example:${port}\r\nAuthorization: Bearer ${token}\r\nContent-Length: 15\r\nConnection: close\r\n\r\n{"payloads":[]}`,
  );
  assert.match(rebound, /^HTTP\/1.1 421/);
  assert.equal((await post('/decode', { payloads: [] }, { origin: 'http://evil.example:8233' })).status, 403);
  assert.match(
    await raw('POST http://a:99999/decode HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'),
    /^HTTP\/1.1 4\d\d/,
  );
  assert.match(await raw('GARBAGE\r\n\r\n'), /^HTTP\/1.1 400/);
  const big = await post('/decode', { payloads: [{ data: 'A'.repeat(5 << 20) }] });
  assert.equal(big.status, 413);
  assert.equal((await post('/decode', { payloads: [] })).status, 200, 'still answering');
});
