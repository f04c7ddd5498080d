import { createPrivateKey, X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import { createCertificateAuthority, issueCertificate, type KeyPair } from './certificates';

/** What the webhook server presents, and the authority the apiserver trusts it by (a configuration's caBundle). */
export interface ServingCertificate extends KeyPair {
  /** The PEM certificate of the authority that signed `cert`. */
  caBundle: string;
}

/** A serving certificate lives a year, as kubeadm's leaves do. */
const servingDays = 365;
/** Replaced when this close to its end, so an operator re-running init well before then never sees an outage. */
const renewBeforeDays = 30;
const dayMs = 86_400_000;

/** The day a certificate ends, as init and the bridge print it. */
export const certificateEnds = (cert: string): string =>
  new Date(Date.parse(new X509Certificate(cert).validTo)).toISOString().slice(0, 10);

export const newWebhookAuthority = () => createCertificateAuthority('capt-webhook-ca');

/** A serving certificate for `host`: an IP SAN when it is an address, a DNS SAN otherwise (what the apiserver checks). */
export function issueWebhookServing(ca: KeyPair, host: string): Promise<KeyPair> {
  const ip = isIP(host) !== 0;
  return issueCertificate(ca, {
    commonName: 'capt-webhook',
    ...(ip ? { ipAddresses: [host] } : { dnsNames: [host] }),
    usage: 'server',
    days: servingDays,
  });
}

/** A new authority and a serving certificate for `host`, kept in memory only (a bridge that registers its own). */
export async function ephemeralWebhookServing(host: string): Promise<ServingCertificate> {
  const ca = await newWebhookAuthority();
  return { ...(await issueWebhookServing(ca, host)), caBundle: ca.cert };
}

/** Why `pair` is not a usable certificate and key (unreadable, mismatched, ending within `days`), or undefined. */
function pairProblem(pair: KeyPair, days: number): string | undefined {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(pair.cert);
    if (!cert.checkPrivateKey(createPrivateKey(pair.key))) return "its key is not the certificate's";
  } catch (err) {
    return `it is not a PEM certificate and key (${(err as Error).message})`;
  }
  const ends = Date.parse(cert.validTo);
  if (ends - Date.now() < days * dayMs)
    return `it ${ends < Date.now() ? 'expired' : 'expires'} on ${certificateEnds(pair.cert)}`;
  return undefined;
}

/**
 * Why the authority cannot be kept, or undefined: it must outlive a serving certificate issued now, so that
 * the caBundle in the webhook configurations stays valid for as long as that certificate.
 */
export function authorityProblem(ca: KeyPair): string | undefined {
  const problem = pairProblem(ca, servingDays + renewBeforeDays);
  if (problem) return problem;
  return new X509Certificate(ca.cert).ca ? undefined : 'it is not a certificate authority';
}

/**
 * Why `pair` is not a usable certificate issued by the authority `caCert`, or undefined. `renewing`: one that
 * ends within the renewal margin is refused too (init replaces it; a bridge serves it).
 */
export function issuedProblem(pair: KeyPair, caCert: string, renewing: boolean): string | undefined {
  const problem = pairProblem(pair, renewing ? renewBeforeDays : 0);
  if (problem) return problem;
  let authority: X509Certificate;
  try {
    authority = new X509Certificate(caCert);
  } catch (err) {
    return `its CA certificate is not PEM (${(err as Error).message})`;
  }
  const cert = new X509Certificate(pair.cert);
  return cert.checkIssued(authority) && cert.verify(authority.publicKey) ? undefined : 'its CA did not sign it';
}

/** Why the serving certificate cannot serve `host` under the authority `caCert` signed it with, or undefined. */
export function servingProblem(serving: KeyPair, caCert: string, host: string, renewing: boolean): string | undefined {
  const problem = issuedProblem(serving, caCert, renewing);
  if (problem) return problem;
  const cert = new X509Certificate(serving.cert);
  const covered = isIP(host) ? cert.checkIP(host) : cert.checkHost(host, { subject: 'never' });
  return covered ? undefined : `it does not name ${host} (${cert.subjectAltName ?? 'no subject alternative name'})`;
}
