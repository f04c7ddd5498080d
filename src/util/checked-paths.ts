import { resolve, sep } from 'node:path';
import { invalidSpec } from '../errors';

/** Kubernetes' object names (a DNS-1123 subdomain): what the loader accepts, and all a path may be built from. */
export const dnsNamePattern = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
export const dnsNameMaxLength = 253;
export const dnsNameRule = 'must be a lowercase DNS name (a-z, 0-9, "-" and ".")';

export const isDnsName = (name: string) =>
  typeof name === 'string' && name.length <= dnsNameMaxLength && dnsNamePattern.test(name);

/**
 * `name` as given, when it is a DNS name; otherwise a non-retryable InvalidSpec failure. Checked where a name
 * becomes a path or an argument, whoever sent it (a workflow's input, a CLI argument), not only by the loader.
 */
export function checkedName(what: string, name: string): string {
  if (!isDnsName(name)) {
    throw invalidSpec(
      `${what} ${JSON.stringify(String(name).slice(0, 80))} ${dnsNameRule}, at most ${dnsNameMaxLength} characters`,
    );
  }
  return name;
}

/** `root` joined with checked names, and proven to stay under `root` once resolved. */
export function pathUnder(root: string, ...names: [what: string, name: string][]): string {
  const base = resolve(root);
  const path = resolve(base, ...names.map(([what, name]) => checkedName(what, name)));
  if (!path.startsWith(base + sep)) throw invalidSpec(`${names.map(([, n]) => n).join('/')} leads outside ${base}`);
  return path;
}
