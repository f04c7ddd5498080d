import { isIP } from 'node:net';

/** Where the apiserver calls capt's webhooks: `https://HOST:PORT`, each webhook at a path under it. */
export interface WebhookUrl {
  /** `https://HOST:PORT`, the host in lower case (IPv6 in brackets). */
  url: string;
  /** The host as a certificate names it: an address without brackets, or a DNS name. */
  host: string;
  port: number;
}

/** A URL's text that is refused, and why: the caller names the flag or object it came from. */
export class WebhookAddressError extends Error {}

const dnsName = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$/;

/**
 * `HOST:PORT` as a URL's authority or a listen address has it: an IPv4 address, an IPv6 one in brackets, or
 * (with `names`) a DNS name; a port from 1 to 65535. The URL parser is not used for this: it rewrites
 * `1.2.3` into `1.2.0.3` where a certificate would then name another host than the one written.
 */
export function hostAndPort(text: string, names: boolean): { host: string; port: number; authority: string } {
  const m = /^(?:\[([^\]]*)\]|([^:[\]]*))(?::(\d*))?$/.exec(text);
  if (!m) throw new WebhookAddressError(`${text}: expected HOST:PORT (an IPv6 address in brackets)`);
  const [, v6, other, port] = m;
  const host = (v6 ?? other ?? '').toLowerCase();
  const valid =
    v6 !== undefined ? isIP(host) === 6 : isIP(host) === 4 || (names && !/^[\d.]+$/.test(host) && dnsName.test(host));
  if (!valid)
    throw new WebhookAddressError(
      `${host || 'an empty host'}: not ${v6 !== undefined ? 'an IPv6 address' : names ? 'an IP address or a DNS name' : 'an IP address of this host, e.g. 0.0.0.0:9443'}`,
    );
  if (port === undefined || port === '') throw new WebhookAddressError(`no port: write ${text}:PORT`);
  const number = Number(port);
  if (number < 1 || number > 65535) throw new WebhookAddressError(`port ${port}: expected 1 to 65535`);
  return { host, port: number, authority: `${v6 !== undefined ? `[${host}]` : host}:${number}` };
}

/**
 * The base URL of capt's webhooks, checked before anything is written: https (the apiserver calls webhooks
 * over TLS only), a host the serving certificate can name, a port, and nothing after them, since capt
 * serves `/mutate`, `/validate` and `/convert` under it.
 */
export function parseWebhookUrl(text: string): WebhookUrl {
  const m = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\/([^/?#]*)(.*)$/.exec(text);
  if (!m) throw new WebhookAddressError('not a URL: expected https://HOST:PORT, e.g. https://10.0.0.5:9443');
  const [, scheme, authority, rest] = m as unknown as [string, string, string, string];
  if (scheme.toLowerCase() !== 'https')
    throw new WebhookAddressError(`${scheme}: the apiserver calls webhooks over https only; use https://HOST:PORT`);
  if (rest !== '' && rest !== '/')
    throw new WebhookAddressError(
      `${rest}: no path, query or fragment; capt serves /mutate, /validate and /convert under https://HOST:PORT`,
    );
  if (authority.includes('@'))
    throw new WebhookAddressError('no user or password: Kubernetes does not take them in a webhook URL');
  const { host, port, authority: normal } = hostAndPort(authority, true);
  return { url: `https://${normal}`, host, port };
}
