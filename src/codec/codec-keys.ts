import { randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { captHome } from '../config/capt-home';
import { createFileOnce } from '../util/files';

/**
 * The keys of capt's payload encryption, from CAPT_CODEC_KEYS or else the key file (CAPT_CODEC_KEY_FILE,
 * default $CAPT_HOME/codec-keys). Both hold entries `ID:BASE64` (32 bytes, AES-256), separated by
 * commas or lines; `#` starts a comment line. The first entry encrypts; every entry decrypts, so a new
 * key goes first and old ones stay until no open workflow holds payloads they encrypted.
 */
export interface CodecKey {
  id: string;
  key: Buffer;
}

export interface CodecKeys {
  /** The key new payloads are encrypted with: the first entry. */
  encryptWith: CodecKey;
  /** Every key by id, the first included. */
  byId: ReadonlyMap<string, CodecKey>;
  /** Where the keys came from, to say where a missing one should be added. */
  source: string;
}

export const codecKeysEnv = 'CAPT_CODEC_KEYS';
const keyBytes = 32;
const keyIdPattern = /^[A-Za-z0-9._-]{1,64}$/;
export const isCodecKeyId = (id: string) => keyIdPattern.test(id);

/** A missing, malformed or unusable key: the message says which, where and how to fix it. */
export class CodecKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CodecKeyError';
  }
}

export function codecKeyFile(): string {
  return process.env.CAPT_CODEC_KEY_FILE ?? join(captHome(), 'codec-keys');
}

const howToCreate = () =>
  `create one with \`capt codec key new\` (it writes ${codecKeyFile()}), or copy the key file of the hosts that run capt's workers, or set ${codecKeysEnv}=ID:BASE64KEY`;

/** Parses `ID:BASE64` entries; `source` names them in errors. Never puts key material in a message. */
export function parseCodecKeys(text: string, source: string): CodecKeys {
  const lines = text.split('\n').filter((line) => !line.trim().startsWith('#'));
  const entries = lines
    .flatMap((line) => line.split(','))
    .map((e) => e.trim())
    .filter(Boolean);
  if (entries.length === 0) throw new CodecKeyError(`${source} holds no payload encryption key; ${howToCreate()}`);
  const keys = entries.map((entry, i) => parseEntry(entry, `${source}, entry ${i + 1}`));
  const byId = new Map<string, CodecKey>();
  for (const key of keys) {
    if (byId.has(key.id))
      throw new CodecKeyError(`${source}: key id '${key.id}' appears twice; give each key its own id`);
    byId.set(key.id, key);
  }
  return { encryptWith: keys[0]!, byId, source };
}

function parseEntry(entry: string, where: string): CodecKey {
  const colon = entry.indexOf(':');
  if (colon < 0)
    throw new CodecKeyError(
      `${where}: expected ID:BASE64KEY (an id, a colon, then 32 bytes in base64); \`capt codec key new --print\` makes one`,
    );
  const id = entry.slice(0, colon).trim();
  const encoded = entry.slice(colon + 1).trim();
  if (!isCodecKeyId(id))
    throw new CodecKeyError(`${where}: key id '${id}' must be 1 to 64 letters, digits, '.', '_' or '-'`);
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(encoded)) throw new CodecKeyError(`${where}: key '${id}' is not base64`);
  const key = Buffer.from(encoded, encoded.includes('-') || encoded.includes('_') ? 'base64url' : 'base64');
  if (key.length !== keyBytes)
    throw new CodecKeyError(
      `${where}: key '${id}' is ${key.length} bytes; AES-256 needs ${keyBytes} (44 base64 characters); \`capt codec key new --print\` makes one`,
    );
  return { id, key };
}

/** The keys this process uses: CAPT_CODEC_KEYS when set, else the key file; a clear error when there are none. */
export function loadCodecKeys(): CodecKeys {
  const fromEnv = process.env[codecKeysEnv];
  if (fromEnv !== undefined) return parseCodecKeys(fromEnv, codecKeysEnv);
  const file = codecKeyFile();
  let text: string;
  try {
    const mode = statSync(file).mode & 0o777;
    if (mode & 0o077)
      throw new CodecKeyError(
        `${file} is readable by others (mode ${mode.toString(8)}); whoever reads it can decrypt every payload: chmod 600 ${file}`,
      );
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if (err instanceof CodecKeyError) throw err;
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new CodecKeyError(
        `no payload encryption key: capt encrypts everything it sends through Temporal, and neither ${codecKeysEnv} nor ${file} exists; ${howToCreate()}`,
      );
    }
    throw new CodecKeyError(`cannot read the payload encryption keys at ${file} (${(err as Error).message})`);
  }
  return parseCodecKeys(text, file);
}

/** A fresh key with `id`, or an id from today's date and a random suffix. */
export function newCodecKey(id?: string): CodecKey {
  const keyId = id ?? `${new Date().toISOString().slice(0, 10)}-${randomBytes(3).toString('hex')}`;
  if (!isCodecKeyId(keyId))
    throw new CodecKeyError(`key id '${keyId}' must be 1 to 64 letters, digits, '.', '_' or '-'`);
  return { id: keyId, key: randomBytes(keyBytes) };
}

export const codecKeyLine = (k: CodecKey) => `${k.id}:${k.key.toString('base64')}`;

/**
 * Writes `key` as a new key file at `file` (mode 0600): whole or not at all, and never over an existing
 * file, which may hold the only copy of the keys that decrypt a running workflow's history. The text is
 * written to a temporary file and hard-linked into place, which fails if the name exists.
 */
export async function createCodecKeyFile(file: string, key: CodecKey): Promise<void> {
  if (!(await linkNewKeyFile(file, key))) {
    throw new CodecKeyError(
      `${file} exists; capt never overwrites a key file. To rotate, put the line of \`capt codec key new --print\` first in it and keep the old lines`,
    );
  }
}

/** createCodecKeyFile's write; false when `file` exists (and is left as it is). */
const linkNewKeyFile = (file: string, key: CodecKey) =>
  createFileOnce(
    file,
    `# capt payload encryption keys: ID:BASE64, the first encrypts, all decrypt\n${codecKeyLine(key)}\n`,
    0o600,
  );

/**
 * Makes sure this host has keys: with neither CAPT_CODEC_KEYS nor a key file, writes a new key file and
 * returns its path. The keys are loaded either way, so a bad one is reported now rather than by a worker.
 */
export async function ensureCodecKeys(): Promise<string | undefined> {
  const file = codecKeyFile();
  const created = process.env[codecKeysEnv] === undefined && (await linkNewKeyFile(file, newCodecKey()));
  loadCodecKeys();
  return created ? file : undefined;
}
