import { readFileSync } from 'node:fs';

/**
 * How capt reaches Temporal, for workers and clients alike: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, and
 * for TLS either TEMPORAL_TLS=true (server-verified TLS) or TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY
 * (mutual TLS), with TEMPORAL_TLS_CA for a private CA. The CLI's --tls-* flags set these.
 */
export interface TemporalTLS {
  serverRootCACertificate?: Buffer;
  clientCertPair?: { crt: Buffer; key: Buffer };
}

export function temporalAddress(): string {
  return process.env.TEMPORAL_ADDRESS ?? `127.0.0.1:${process.env.CAPT_DEV_PORT ?? 7233}`;
}

export function temporalNamespace(): string {
  return process.env.TEMPORAL_NAMESPACE ?? 'default';
}

export function temporalTLS(): TemporalTLS | undefined {
  const { TEMPORAL_TLS, TEMPORAL_TLS_CERT, TEMPORAL_TLS_KEY, TEMPORAL_TLS_CA } = process.env;
  if (!TEMPORAL_TLS_CERT && !TEMPORAL_TLS_KEY && !TEMPORAL_TLS_CA && TEMPORAL_TLS !== 'true') return undefined;
  if (!!TEMPORAL_TLS_CERT !== !!TEMPORAL_TLS_KEY)
    throw new Error('TLS: give both --tls-cert and --tls-key (TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY), or neither');
  const read = (path: string, what: string) => {
    try {
      return readFileSync(path);
    } catch {
      throw new Error(`TLS: cannot read the ${what} at ${path}`);
    }
  };
  return {
    ...(TEMPORAL_TLS_CA ? { serverRootCACertificate: read(TEMPORAL_TLS_CA, 'CA certificate') } : {}),
    ...(TEMPORAL_TLS_CERT && TEMPORAL_TLS_KEY
      ? {
          clientCertPair: {
            crt: read(TEMPORAL_TLS_CERT, 'client certificate'),
            key: read(TEMPORAL_TLS_KEY, 'client key'),
          },
        }
      : {}),
  };
}
