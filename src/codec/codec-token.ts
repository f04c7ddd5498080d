import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { captHome } from '../config/capt-home';
import { createFileOnce } from '../util/files';
import { CodecKeyError } from './codec-keys';

/**
 * The codec server's credential: a random token in a file only its owner reads (CAPT_CODEC_TOKEN_FILE,
 * default $CAPT_HOME/codec-token). Whoever presents it may have payloads decrypted, so it is as secret as
 * the payload keys.
 */
export function codecTokenFile(): string {
  return process.env.CAPT_CODEC_TOKEN_FILE ?? join(captHome(), 'codec-token');
}

/** Creates the token file when there is none (never over one); returns the token. */
export async function ensureCodecToken(file = codecTokenFile()): Promise<string> {
  await createFileOnce(file, `${randomBytes(32).toString('base64url')}\n`, 0o600);
  return readCodecToken(file);
}

/** The token, refused when the file is readable by anyone but its owner or does not hold one. */
export function readCodecToken(file = codecTokenFile()): string {
  let mode: number;
  let text: string;
  try {
    mode = statSync(file).mode;
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new CodecKeyError(
      `cannot read the codec server's token at ${file} (${(err as Error).message}); \`capt codec-server\` and \`capt dev start\` create it`,
    );
  }
  if (mode & 0o077)
    throw new CodecKeyError(
      `${file} is readable by others (mode ${(mode & 0o777).toString(8)}); it lets whoever holds it decrypt payloads: chmod 600 ${file}`,
    );
  const token = text.trim();
  if (!/^[A-Za-z0-9_-]{32,}$/.test(token))
    throw new CodecKeyError(
      `${file} holds no token (32 or more letters, digits, '_' or '-'); remove it and \`capt codec-server\` makes a new one`,
    );
  return token;
}

/** Compares in constant time, whatever the lengths. */
export function tokenMatches(presented: string | undefined, token: string): boolean {
  if (presented === undefined) return false;
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(presented), digest(token));
}
