import type { DataConverter } from '@temporalio/common';
import { AesGcmCodec, acceptPlaintextEnv } from './aes-gcm-codec';
import { loadCodecKeys, type CodecKeys } from './codec-keys';

/** The failure converter of capt's workflow bundles and data converters (failure-converter.ts). */
export const failureConverterPath = require.resolve('./failure-converter');

/**
 * The data converter of every Temporal client and worker capt makes: the default payload converter, failures
 * whose messages and stack traces travel as an encoded payload, then AES-256-GCM encryption of every payload,
 * refusing plaintext unless CAPT_CODEC_ACCEPT_PLAINTEXT=1. Throws CodecKeyError, saying how to make a key,
 * when there is none.
 */
export function captDataConverter(keys: CodecKeys = loadCodecKeys()): DataConverter {
  return { payloadCodecs: [new AesGcmCodec(keys, process.env[acceptPlaintextEnv] === '1')], failureConverterPath };
}
