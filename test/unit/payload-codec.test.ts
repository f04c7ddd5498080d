import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { AesGcmCodec, encryptedEncoding, keyIdMetadata } from '../../src/codec/aes-gcm-codec';
import {
  codecKeyLine,
  codecKeysEnv,
  createCodecKeyFile,
  ensureCodecKeys,
  loadCodecKeys,
  newCodecKey,
  parseCodecKeys,
  type CodecKey,
} from '../../src/codec/codec-keys';

const keysOf = (...keys: CodecKey[]) => parseCodecKeys(keys.map(codecKeyLine).join(','), 'the test keys');
const k1 = newCodecKey('k1');
const k2 = newCodecKey('k2');
const secret = { kubeconfig: 'client-key-data: c2VjcmV0LWtleS1tYXRlcmlhbA==', token: 'abcdef.0123456789abcdef' };
const plain = () => defaultPayloadConverter.toPayload(secret);
const text = (p: Payload) => Buffer.from(p.data ?? []).toString('utf8');
const meta = (p: Payload, key: string) => Buffer.from(p.metadata?.[key] ?? []).toString('utf8');

let dir: string;
const savedEnv = { ...process.env };
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'capt-codec-'));
});
after(async () => {
  process.env = savedEnv;
  await rm(dir, { recursive: true, force: true });
});

test('a payload round-trips with its metadata, and what is stored shows neither its data nor its encoding', async () => {
  const codec = new AesGcmCodec(keysOf(k1));
  const [sealed] = await codec.encode([plain()]);
  assert.equal(meta(sealed!, 'encoding'), encryptedEncoding);
  assert.equal(meta(sealed!, keyIdMetadata), 'k1');
  assert.deepEqual(Object.keys(sealed!.metadata!).sort(), ['encoding', keyIdMetadata].sort());
  assert.ok(!text(sealed!).includes('client-key-data') && !text(sealed!).includes('json/plain'));
  const [again] = await codec.encode([plain()]);
  assert.notDeepEqual(again!.data, sealed!.data, 'a fresh nonce per payload: the same value encrypts differently');
  const [opened] = await codec.decode([sealed!]);
  assert.equal(meta(opened!, 'encoding'), 'json/plain');
  assert.deepEqual(defaultPayloadConverter.fromPayload(opened!), secret);
  await assert.rejects(
    codec.decode([plain()]),
    /refused a payload that is not encrypted \(encoding "json\/plain"\).*CAPT_CODEC_ACCEPT_PLAINTEXT=1/,
    'plaintext is refused',
  );
  await assert.rejects(
    codec.decode([sealed!, { data: Buffer.from('{}') }]),
    /not encrypted \(encoding ""\)/,
    'a payload without metadata too, even beside encrypted ones',
  );
  const [migrating] = await new AesGcmCodec(keysOf(k1), true).decode([plain()]);
  assert.deepEqual(migrating, plain(), 'only the migration opt-in reads a payload from before encryption as it is');
});

test('rotation: with the new key first, old payloads still decrypt and new ones use the new key; a process without it says which key to add', async () => {
  const [old] = await new AesGcmCodec(keysOf(k1)).encode([plain()]);
  const rotated = new AesGcmCodec(keysOf(k2, k1));
  assert.deepEqual(defaultPayloadConverter.fromPayload((await rotated.decode([old!]))[0]!), secret);
  const [fresh] = await rotated.encode([plain()]);
  assert.equal(meta(fresh!, keyIdMetadata), 'k2');
  await assert.rejects(new AesGcmCodec(keysOf(k1)).decode([fresh!]), {
    name: 'PayloadDecryptionError',
    message:
      "payload encrypted with key 'k2', which this process does not have; add it to the test keys (after the first entry, which encrypts)",
  });
});

test('a tampered payload fails authentication instead of decoding to something else', async () => {
  const codec = new AesGcmCodec(keysOf(k1, k2));
  const [sealed] = await codec.encode([plain()]);
  const flipped = Buffer.from(sealed!.data!);
  flipped[20]! ^= 1;
  await assert.rejects(
    codec.decode([{ ...sealed!, data: flipped }]),
    /payload encrypted with key 'k1' failed authentication: it was altered/,
  );
  const relabelled = { ...sealed!, metadata: { ...sealed!.metadata, [keyIdMetadata]: Buffer.from('k2') } };
  await assert.rejects(codec.decode([relabelled]), /payload encrypted with key 'k2' failed authentication/);
  await assert.rejects(
    codec.decode([{ ...sealed!, data: flipped.subarray(0, 10) }]),
    /too short to be one: it was altered/,
  );
  const sameId = new AesGcmCodec(parseCodecKeys(codecKeyLine({ id: 'k1', key: k2.key }), 'another host'));
  await assert.rejects(
    sameId.decode([sealed!]),
    /or the key 'k1' in another host is not the one it was encrypted with/,
  );
});

test('keys: entries by comma or line, comments, base64url; malformed, wrong-length, duplicate and missing keys are refused with where and how, never with the key', () => {
  const keys = parseCodecKeys(
    `# rotated 2026-11\n${codecKeyLine(k2)}, ${codecKeyLine(k1)}\n\n${'k3:' + k1.key.toString('base64url')}\n`,
    'file',
  );
  assert.equal(keys.encryptWith.id, 'k2');
  assert.deepEqual([...keys.byId.keys()], ['k2', 'k1', 'k3']);
  assert.deepEqual(keys.byId.get('k3')!.key, k1.key);
  const material = k1.key.toString('base64');
  const refused = (text: string, message: RegExp) =>
    assert.throws(
      () => parseCodecKeys(text, 'CAPT_CODEC_KEYS'),
      (err: Error) => {
        assert.match(err.message, message);
        assert.ok(!err.message.includes(material.slice(0, 12)), 'no key material in the message');
        return true;
      },
    );
  refused(material, /^CAPT_CODEC_KEYS, entry 1: expected ID:BASE64KEY/);
  refused(
    `${codecKeyLine(k1)},k2:${k1.key.subarray(0, 16).toString('base64')}`,
    /^CAPT_CODEC_KEYS, entry 2: key 'k2' is 16 bytes; AES-256 needs 32/,
  );
  refused(`k1:${material}!`, /key 'k1' is not base64/);
  refused(`bad id:${material}`, /key id 'bad id' must be/);
  refused(`${codecKeyLine(k1)}\n${codecKeyLine(k1)}`, /key id 'k1' appears twice/);
  refused('# nothing yet\n', /holds no payload encryption key; create one with `capt codec key new`/);
});

test('the key file: written whole with mode 0600, never over an existing one; CAPT_CODEC_KEYS wins over it; none at all says how to make one', async () => {
  const file = join(dir, 'home', 'codec-keys');
  process.env.CAPT_CODEC_KEY_FILE = file;
  delete process.env[codecKeysEnv];
  assert.throws(
    loadCodecKeys,
    new RegExp(
      `no payload encryption key: .*neither CAPT_CODEC_KEYS nor ${file} exists; create one with \`capt codec key new\``,
    ),
  );
  assert.equal(await ensureCodecKeys(), file, 'dev start makes the key a new user never has to think about');
  assert.equal((await stat(file)).mode & 0o777, 0o600);
  const first = await readFile(file, 'utf8');
  assert.equal(await ensureCodecKeys(), undefined, 'a second start keeps the key');
  await assert.rejects(createCodecKeyFile(file, k2), /exists; capt never overwrites a key file/);
  assert.equal(await readFile(file, 'utf8'), first, 'the key file is unchanged');
  assert.equal(loadCodecKeys().source, file);
  await chmod(file, 0o644);
  assert.throws(
    loadCodecKeys,
    new RegExp(`${file} is readable by others \\(mode 644\\); .*chmod 600`),
    'a key file others can read is refused',
  );
  await chmod(file, 0o600);
  process.env[codecKeysEnv] = codecKeyLine(k2);
  assert.equal(loadCodecKeys().encryptWith.id, 'k2');
  assert.equal(loadCodecKeys().source, codecKeysEnv);
  delete process.env[codecKeysEnv];
  await writeFile(file, 'k1:short\n');
  await assert.rejects(
    ensureCodecKeys(),
    /codec-keys, entry 1: key 'k1' is \d+ bytes/,
    'a bad key file is reported at start, not by a worker later',
  );
});
