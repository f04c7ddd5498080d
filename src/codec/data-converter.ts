import type { DataConverter } from '@temporalio/common';
import { AesGcmCodec } from './aes-gcm-codec';
import { loadCodecKeys, type CodecKeys } from './codec-keys';

/**
 * The data converter of every Temporal client and worker capt makes: the default payload converter, then
 * AES-256-GCM encryption of every payload. Throws CodecKeyError, saying how to make a key, when there is none.
 */
export function captDataConverter(keys: CodecKeys = loadCodecKeys()): DataConverter {
  return { payloadCodecs: [new AesGcmCodec(keys)] };
}
