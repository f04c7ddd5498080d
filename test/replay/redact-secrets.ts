/**
 * The replay fixtures hold decoded histories of real runs, so every secret in them is replaced by a dummy
 * of the same shape (a PEM stays a PEM, a bootstrap token stays `[a-z0-9]{6}.[a-z0-9]{16}`): replay compares
 * commands, not payloads, and the workflows never parse a key. `secretsLeft` is the check the capture and
 * the replay test both run.
 */
const pemPrivateKey = /-----BEGIN ([A-Z ]*?)PRIVATE KEY-----[\s\S]*?-----END \1PRIVATE KEY-----/g;
export const redactedPem = '-----BEGIN REDACTED KEY-----\nUkVEQUNURUQ=\n-----END REDACTED KEY-----';
/** kubeadm's bootstrap token, `<id>.<secret>`, wherever it shows (a join command, a kubeadm config). */
const bootstrapToken = /\b[a-z0-9]{6}\.[a-z0-9]{16}\b/g;
export const dummyBootstrapToken = 'abcdef.0123456789abcdef';
const kubeconfigKey = /(client-key-data:\s*)[A-Za-z0-9+/=]+/g;
const base64Text = /^[A-Za-z0-9+/]{40,}={0,2}$/;

function redactText(text: string): string {
  return text
    .replace(pemPrivateKey, redactedPem)
    .replace(bootstrapToken, dummyBootstrapToken)
    .replace(kubeconfigKey, '$1UkVEQUNURUQ=');
}

function redactString(value: string): string {
  // File contents travel base64-encoded too (cloud-init's b64): redact what they decode to.
  if (base64Text.test(value)) {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const redacted = redactText(decoded);
    if (redacted !== decoded) return Buffer.from(redacted).toString('base64');
  }
  return redactText(value);
}

/** `value` (a decoded JSON payload) with every secret replaced. */
export function redactSecrets(value: unknown): unknown {
  if (typeof value === 'string') return redactString(value);
  if (Array.isArray(value)) return value.map(redactSecrets);
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactSecrets(v)]));
  return value;
}

/**
 * Every string in `value` as it reads, and decoded where it is base64 (a payload's data, a file's b64
 * content), JSON inside it walked too: what a secret scan has to look at.
 */
export function readableText(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') {
    out.push(value);
    if (base64Text.test(value)) {
      const decoded = Buffer.from(value, 'base64').toString('utf8');
      out.push(decoded);
      try {
        readableText(JSON.parse(decoded), out);
      } catch {
        // Not JSON: the decoded text is in `out` already.
      }
    }
  } else if (value && typeof value === 'object') {
    for (const child of Object.values(value)) readableText(child, out);
  }
  return out;
}

/** What of a secret is left in `value` (a fixture, its payloads included): empty when nothing is. */
export function secretsLeft(value: unknown): string[] {
  const text = readableText(value).join('\n');
  const found: string[] = [];
  if (/PRIVATE KEY/.test(text)) found.push('a PEM private key');
  if ([...text.matchAll(bootstrapToken)].some(([token]) => token !== dummyBootstrapToken))
    found.push('a bootstrap token');
  if (/client-key-data:\s*(?!UkVEQUNURUQ=)[A-Za-z0-9+/]/.test(text)) found.push('kubeconfig client key data');
  return found;
}
