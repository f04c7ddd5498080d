import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { certificateSigningRequest } from '../../src/pki/certificate-request';
import { newPrivateKey } from '../../src/pki/certificates';

const run = promisify(execFile);

test('a certificate request made in-process is one openssl verifies, with the subject asked for', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'capt-csr-test-'));
  try {
    // A long name takes DER's two-byte lengths too.
    for (const name of ['worker-0', 'n'.repeat(200)]) {
      const file = join(dir, 'request.csr');
      await writeFile(file, certificateSigningRequest(newPrivateKey(), `system:node:${name}`, ['system:nodes']));
      const { stdout, stderr } = await run('openssl', ['req', '-verify', '-noout', '-subject', '-in', file]);
      assert.match(stderr + stdout, /verify OK/i);
      assert.match(stdout, new RegExp(`subject=O ?= ?system:nodes, CN ?= ?system:node:${name}\\n`));
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
