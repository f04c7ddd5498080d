import { execFile } from 'node:child_process';
import { createHash, createPublicKey, generateKeyPairSync, randomBytes, X509Certificate } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { withScratch } from './scratch';

const run = promisify(execFile);

/** A PEM certificate and its PEM private key. */
export interface KeyPair {
  cert: string;
  key: string;
}

export interface CertificateRequest {
  commonName: string;
  organizations?: string[];
  dnsNames?: string[];
  ipAddresses?: string[];
  usage: 'server' | 'client' | 'server+client';
  /** Validity in days; Kubernetes leaf certificates default to one year, as kubeadm issues them. */
  days?: number;
}

export function newPrivateKey(): string {
  // P-256 keys are accepted by every Kubernetes component and are fast to make, which matters at 200 machines.
  return generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString();
}

/** An RSA key pair for signing service-account tokens (sa.key / sa.pub in kubeadm's layout). */
export function newServiceAccountKeyPair(): { privateKey: string; publicKey: string } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicKey: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

// openssl is the only tool here that signs X.509; each call works in its own private temp folder (scratch.ts).

function subject(commonName: string, organizations: string[] = []): string {
  const escape = (v: string) => v.replace(/[/=\\]/g, (c) => `\\${c}`);
  return organizations.map((o) => `/O=${escape(o)}`).join('') + `/CN=${escape(commonName)}`;
}

/** A self-signed certificate authority valid for ten years, as kubeadm creates them. */
export async function createCertificateAuthority(commonName: string): Promise<KeyPair> {
  return withScratch(async (dir) => {
    const key = newPrivateKey();
    await writeFile(join(dir, 'ca.key'), key, { mode: 0o600 });
    await run('openssl', [
      'req',
      '-x509',
      '-new',
      '-key',
      join(dir, 'ca.key'),
      '-subj',
      subject(commonName),
      '-days',
      '3650',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
      '-out',
      join(dir, 'ca.crt'),
    ]);
    return { cert: await readFile(join(dir, 'ca.crt'), 'utf8'), key };
  });
}

/** A leaf certificate and a new private key for it, signed by `ca`. */
export async function issueCertificate(ca: KeyPair, request: CertificateRequest): Promise<KeyPair> {
  const key = newPrivateKey();
  return {
    cert: await certifyPublicKey(ca, createPublicKey(key).export({ type: 'spki', format: 'pem' }).toString(), request),
    key,
  };
}

/**
 * A certificate signed by `ca` for a public key whose private key stays with its holder (a client that
 * asks for credentials sends only this), as a CSR signer does.
 */
export async function certifyPublicKey(ca: KeyPair, publicKey: string, request: CertificateRequest): Promise<string> {
  return withScratch(async (dir) => {
    const usages = { server: 'serverAuth', client: 'clientAuth', 'server+client': 'serverAuth,clientAuth' }[
      request.usage
    ];
    const sans = [
      ...(request.dnsNames ?? []).map((d) => `DNS:${d}`),
      ...(request.ipAddresses ?? []).map((ip) => `IP:${ip}`),
    ];
    const extensions = [
      'basicConstraints=critical,CA:FALSE',
      'keyUsage=critical,digitalSignature,keyEncipherment',
      `extendedKeyUsage=${usages}`,
      ...(sans.length ? [`subjectAltName=${sans.join(',')}`] : []),
    ];
    await Promise.all([
      writeFile(join(dir, 'ca.crt'), ca.cert),
      writeFile(join(dir, 'ca.key'), ca.key, { mode: 0o600 }),
      writeFile(join(dir, 'leaf.pub'), publicKey),
      writeFile(join(dir, 'ext.cnf'), extensions.join('\n') + '\n'),
    ]);
    await run('openssl', [
      'x509',
      '-new',
      '-force_pubkey',
      join(dir, 'leaf.pub'),
      '-subj',
      subject(request.commonName, request.organizations),
      '-CA',
      join(dir, 'ca.crt'),
      '-CAkey',
      join(dir, 'ca.key'),
      '-set_serial',
      `0x${randomBytes(16).toString('hex')}`,
      '-days',
      String(request.days ?? 365),
      '-extfile',
      join(dir, 'ext.cnf'),
      '-out',
      join(dir, 'leaf.crt'),
    ]);
    return readFile(join(dir, 'leaf.crt'), 'utf8');
  });
}

/** kubeadm's pin of a CA (discovery caCertHashes): `sha256:` and the hex SHA-256 of its SubjectPublicKeyInfo. */
export function caCertHash(caPem: string): string {
  return `sha256:${createHash('sha256')
    .update(new X509Certificate(caPem).publicKey.export({ type: 'spki', format: 'der' }))
    .digest('hex')}`;
}
