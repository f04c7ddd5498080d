import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { captHome } from '../config/capt-home';

/**
 * Workflows carry only a reference to a secret (kubeconfigs, private keys, bootstrap tokens), never its
 * value, so nothing secret reaches workflow history. The value lives in a store the workers can read:
 * here a directory of 0600 files under CAPT_HOME/secrets.
 */
export interface SecretRef {
  secret: string;
}

const keyPattern = /^[a-z0-9][a-z0-9._/-]*$/;

function secretPath(ref: SecretRef): string {
  if (!keyPattern.test(ref.secret) || ref.secret.includes('..')) {
    throw new Error(`invalid secret reference '${ref.secret}': use lowercase letters, digits, '.', '_', '-' and '/' only`);
  }
  return join(captHome(), 'secrets', ref.secret);
}

export async function putSecret(ref: SecretRef, value: string): Promise<void> {
  const path = secretPath(ref);
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  await writeFile(path, value, { mode: 0o600 });
}

export async function getSecret(ref: SecretRef): Promise<string> {
  try {
    return await readFile(secretPath(ref), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new Error(`secret '${ref.secret}' does not exist in ${join(captHome(), 'secrets')}`, { cause: err });
    throw err;
  }
}

/** Deleting a secret that is already gone succeeds. */
export async function deleteSecret(ref: SecretRef): Promise<void> {
  await rm(secretPath(ref), { force: true });
}
