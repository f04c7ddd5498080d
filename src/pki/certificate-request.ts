import { createPrivateKey, createPublicKey, sign } from 'node:crypto';

/**
 * PKCS#10 certificate requests, DER-encoded here: a kubelet's TLS bootstrap makes one per worker join, and node's
 * crypto signs it in-process (openssl would need the key in a file, or a process per join).
 */
function der(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  const n = body.length;
  const length = n < 0x80 ? [n] : n < 0x100 ? [0x81, n] : [0x82, n >> 8, n & 0xff];
  return Buffer.concat([Buffer.from([tag, ...length]), body]);
}
const sequence = (...content: Buffer[]) => der(0x30, ...content);
const set = (...content: Buffer[]) => der(0x31, ...content);
const oid = (...bytes: number[]) => Buffer.from([0x06, bytes.length, ...bytes]);
const attribute = (type: Buffer, value: string) => set(sequence(type, der(0x0c, Buffer.from(value, 'utf8'))));
const organization = oid(0x55, 0x04, 0x0a);
const commonNameOid = oid(0x55, 0x04, 0x03);
const ecdsaWithSha256 = sequence(oid(0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02));

/** A PEM certificate request for an EC `key` (PEM) with subject O=organizations..., CN=commonName, no extensions. */
export function certificateSigningRequest(key: string, commonName: string, organizations: string[]): string {
  const privateKey = createPrivateKey(key);
  if (privateKey.asymmetricKeyType !== 'ec')
    throw new Error(`an EC key is needed, not ${privateKey.asymmetricKeyType}`);
  const subject = sequence(
    ...organizations.map((o) => attribute(organization, o)),
    attribute(commonNameOid, commonName),
  );
  const spki = createPublicKey(privateKey).export({ type: 'spki', format: 'der' });
  const info = sequence(der(0x02, Buffer.from([0])), subject, spki, der(0xa0));
  const request = sequence(info, ecdsaWithSha256, der(0x03, Buffer.from([0]), sign('sha256', info, privateKey)));
  const lines = request.toString('base64').match(/.{1,64}/g)!;
  return `-----BEGIN CERTIFICATE REQUEST-----\n${lines.join('\n')}\n-----END CERTIFICATE REQUEST-----\n`;
}
