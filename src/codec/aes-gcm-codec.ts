import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { CodecKey, CodecKeys } from './codec-keys';

/** The envelope's encoding, and the metadata key that names the key a payload was encrypted with. */
export const encryptedEncoding = 'binary/encrypted';
export const keyIdMetadata = 'encryption-key-id';
/** Lets payloads that are not encrypted through decode: only for reading histories from before encryption. */
export const acceptPlaintextEnv = 'CAPT_CODEC_ACCEPT_PLAINTEXT';
const nonceBytes = 12;
const tagBytes = 16;

/** A payload this process cannot decrypt: its key is not here, or it was altered. */
export class PayloadDecryptionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PayloadDecryptionError';
  }
}

const utf8 = (bytes: Uint8Array | null | undefined) => (bytes ? Buffer.from(bytes).toString('utf8') : undefined);

/**
 * Encrypts every payload with AES-256-GCM. The whole original payload (metadata and data) is serialised
 * and encrypted, so its encoding comes back on decode; the envelope's metadata says only `binary/encrypted`
 * and the key id. Data = 96-bit random nonce, ciphertext, 128-bit tag; the key id is authenticated too.
 * A payload that is not encrypted is refused: whoever reaches Temporal without the key must not have capt
 * act on input of theirs. Only `acceptPlaintext` (CAPT_CODEC_ACCEPT_PLAINTEXT=1, for reading histories from
 * before encryption) lets one through as it is.
 */
export class AesGcmCodec implements PayloadCodec {
  constructor(
    private readonly keys: CodecKeys,
    private readonly acceptPlaintext = false,
  ) {}

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => this.encrypt(p, this.keys.encryptWith));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => {
      if (utf8(p.metadata?.encoding) === encryptedEncoding) return this.decrypt(p);
      if (this.acceptPlaintext) return p;
      throw new PayloadDecryptionError(
        `refused a payload that is not encrypted (encoding ${JSON.stringify(utf8(p.metadata?.encoding) ?? '')}): only clients with capt's payload key may send to its workflows; to read histories written before encryption, set ${acceptPlaintextEnv}=1`,
      );
    });
  }

  private encrypt(payload: Payload, { id, key }: CodecKey): Payload {
    const nonce = randomBytes(nonceBytes);
    const cipher = createCipheriv('aes-256-gcm', key, nonce);
    cipher.setAAD(Buffer.from(id));
    const plain = temporal.api.common.v1.Payload.encode(payload).finish();
    const sealed = Buffer.concat([nonce, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
    return { metadata: { encoding: Buffer.from(encryptedEncoding), [keyIdMetadata]: Buffer.from(id) }, data: sealed };
  }

  private decrypt(payload: Payload): Payload {
    const id = utf8(payload.metadata?.[keyIdMetadata]);
    if (!id)
      throw new PayloadDecryptionError(
        `an encrypted payload names no key (metadata ${keyIdMetadata} is missing): it was altered`,
      );
    const codecKey = this.keys.byId.get(id);
    if (!codecKey)
      throw new PayloadDecryptionError(
        `payload encrypted with key '${id}', which this process does not have; add it to ${this.keys.source} (after the first entry, which encrypts)`,
      );
    const sealed = Buffer.from(payload.data ?? []);
    if (sealed.length < nonceBytes + tagBytes)
      throw new PayloadDecryptionError(
        `payload encrypted with key '${id}' is ${sealed.length} bytes, too short to be one: it was altered`,
      );
    const decipher = createDecipheriv('aes-256-gcm', codecKey.key, sealed.subarray(0, nonceBytes));
    decipher.setAAD(Buffer.from(id));
    decipher.setAuthTag(sealed.subarray(sealed.length - tagBytes));
    let plain: Buffer;
    try {
      plain = Buffer.concat([decipher.update(sealed.subarray(nonceBytes, sealed.length - tagBytes)), decipher.final()]);
    } catch {
      throw new PayloadDecryptionError(
        `payload encrypted with key '${id}' failed authentication: it was altered, or the key '${id}' in ${this.keys.source} is not the one it was encrypted with`,
      );
    }
    return temporal.api.common.v1.Payload.decode(plain);
  }
}
