import { X509Certificate } from 'node:crypto';
import type { CertificateExpiry } from '../contract/certificates';

/** Subjects come from files a machine wrote: a bounded length keeps a page of them small. */
const subjectChars = 200;

/** The first certificate of `pem`, named `name`: its subject (one line) and end of validity; undefined if none. */
export function certificateExpiry(name: string, pem: string): CertificateExpiry | undefined {
  try {
    const cert = new X509Certificate(pem);
    return {
      name,
      subject: cert.subject.split('\n').join(', ').slice(0, subjectChars),
      notAfter: new Date(cert.validTo).toISOString(),
    };
  } catch {
    return undefined;
  }
}
