import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { defaultPayloadConverter } from '@temporalio/common';
import { AesGcmCodec } from '../../src/codec/aes-gcm-codec';
import { codecKeyLine, newCodecKey, parseCodecKeys } from '../../src/codec/codec-keys';
import { startCodecServer, type RunningCodecServer } from '../../src/codec/codec-server';

const ui = 'http://127.0.0.1:8233';
const codec = new AesGcmCodec(parseCodecKeys(codecKeyLine(newCodecKey('k1')), 'the test key'));
let server: RunningCodecServer;

before(async () => {
  server = await startCodecServer({ host: '127.0.0.1', port: 0, corsOrigins: [ui], codec });
});
after(() => server.close());

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-namespace': 'default', ...headers }, body: JSON.stringify(body) });

test('POST /encode and /decode speak the remote codec protocol: proto JSON payloads, bytes in base64', async () => {
  const payload = defaultPayloadConverter.toPayload({ name: 'plain' })!;
  const asJson = { metadata: { encoding: Buffer.from(payload.metadata!.encoding!).toString('base64') }, data: Buffer.from(payload.data!).toString('base64') };
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
  const preflight = (origin: string) => fetch(`${server.url}/decode`, {
    method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-namespace' },
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
  assert.equal((await post('/decode', { payloads: [] }, { origin: 'http://evil.example:8233' })).headers.get('access-control-allow-origin'), null);
});

test('bad requests get 4xx with what is wrong: not JSON, a wrong shape, a payload of an unknown key, another path or method', async () => {
  const notJson = await fetch(`${server.url}/decode`, { method: 'POST', body: 'payloads' });
  assert.deepEqual([notJson.status, await notJson.text()], [400, 'the body is not JSON; expected {"payloads": [{"metadata": {...}, "data": "..."}]}\n']);
  assert.equal((await post('/decode', { payload: [] })).status, 400);
  const foreign = await new AesGcmCodec(parseCodecKeys(codecKeyLine(newCodecKey('k9')), 'elsewhere')).encode([defaultPayloadConverter.toPayload(1)!]);
  const unknown = await post('/decode', { payloads: foreign.map((p) => ({ metadata: Object.fromEntries(Object.entries(p.metadata!).map(([k, v]) => [k, Buffer.from(v).toString('base64')])), data: Buffer.from(p.data!).toString('base64') })) });
  assert.equal(unknown.status, 400);
  assert.match(await unknown.text(), /encrypted with key 'k9', which this process does not have/);
  assert.equal((await post('/other', { payloads: [] })).status, 404);
  assert.equal((await fetch(`${server.url}/decode`)).status, 405);
});
