import { X509Certificate } from 'node:crypto';
import { createCertificateAuthority, issueCertificate, type KeyPair } from './certificates';
import { authorityProblem, issuedProblem } from './webhook-serving';

/**
 * The client certificate the apiserver presents to capt's admission webhooks, and the authority it was issued
 * by: the one the bridge checks a caller against.
 */
export interface WebhookClient {
  ca: KeyPair;
  client: KeyPair;
}

const issueWebhookClient = (ca: KeyPair) =>
  issueCertificate(ca, { commonName: 'kube-apiserver-webhook-client', usage: 'client', days: 365 });

/**
 * `kept` while it still serves (the authority outlives a new certificate, the certificate was issued by it and
 * is outside its renewal margin); otherwise a new certificate under the kept authority, or a new authority too.
 * `renewed` says what was made and why, undefined when everything was kept.
 */
export async function keepOrIssueWebhookClient(
  kept: WebhookClient | undefined,
): Promise<WebhookClient & { renewed?: string }> {
  const caWhy = kept && authorityProblem(kept.ca);
  if (!kept || caWhy) {
    const ca = await createCertificateAuthority('capt-webhook-client-ca');
    const renewed = kept
      ? `a new client CA (the previous one: ${caWhy}) and client certificate`
      : 'a new client CA and client certificate';
    return { ca, client: await issueWebhookClient(ca), renewed };
  }
  const clientWhy = issuedProblem(kept.client, kept.ca.cert, true);
  if (!clientWhy) return kept;
  const renewed = `a new client certificate under the kept CA (the previous one: ${clientWhy})`;
  return { ca: kept.ca, client: await issueWebhookClient(kept.ca), renewed };
}

/** Why `pem` cannot be the authority a bridge checks the apiserver's client certificate against, or undefined. */
export function clientAuthorityProblem(pem: string): string | undefined {
  try {
    return new X509Certificate(pem).ca ? undefined : 'it is not a certificate authority';
  } catch (err) {
    return `it is not a PEM certificate (${(err as Error).message})`;
  }
}
