import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import type { HostPathMount } from '../../src/contract/kubeadm-config-spec';

const run = promisify(execFile);
const volumesModule = join(__dirname, '../../providers/local/kubeadm/component-volumes.js');

/**
 * mountComponentVolumes in a mount namespace of its own, as root of a user namespace (as inside a machine);
 * then `after` (a shell script over the same namespace). Prints what each step said.
 */
async function inMachineNamespace(volumes: HostPathMount[], after: string): Promise<{ code: number; out: string }> {
  const script = `
    require(${JSON.stringify(volumesModule)})
      .mountComponentVolumes({ cluster: { apiServer: { extraVolumes: ${JSON.stringify(volumes)} } } })
      .then(() => require('node:child_process').execFileSync('sh', ['-c', ${JSON.stringify(after)}], { stdio: 'inherit' }))
      .catch((e) => { console.log('error: ' + e.message); process.exitCode = 3; });`;
  try {
    const { stdout } = await run('unshare', ['--user', '--map-root-user', '--mount', process.execPath, '-e', script]);
    return { code: 0, out: stdout };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, out: e.stdout + e.stderr };
  }
}

test('extraVolumes: hostPath bound at mountPath, read-only when asked, made by the OrCreate types, and the machine refused with the volume named when its pathType does not hold', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'capt-volumes-'));
  try {
    await writeFile(join(dir, 'policy.yaml'), 'kind: Policy\n');
    const bound = await inMachineNamespace(
      [
        {
          name: 'policy',
          hostPath: join(dir, 'policy.yaml'),
          mountPath: join(dir, 'etc/policy.yaml'),
          readOnly: true,
          pathType: 'File',
        },
        {
          name: 'logs',
          hostPath: join(dir, 'logs'),
          mountPath: join(dir, 'var/log/apiserver'),
          pathType: 'DirectoryOrCreate',
        },
      ],
      `cat ${dir}/etc/policy.yaml; echo changed > ${dir}/etc/policy.yaml 2>/dev/null || echo read-only; echo line > ${dir}/var/log/apiserver/audit.log && echo written`,
    );
    assert.equal(bound.code, 0, bound.out);
    assert.equal(bound.out, 'kind: Policy\nread-only\nwritten\n');
    // The log written through the mount is in hostPath; outside the namespace nothing stays mounted.
    assert.equal(await readFile(join(dir, 'logs/audit.log'), 'utf8'), 'line\n');
    assert.equal(await readFile(join(dir, 'etc/policy.yaml'), 'utf8'), '');

    const missing = await inMachineNamespace(
      [{ name: 'pss', hostPath: join(dir, 'absent.yaml'), mountPath: join(dir, 'absent.yaml'), pathType: 'File' }],
      'echo started',
    );
    assert.equal(missing.code, 3);
    assert.equal(
      missing.out,
      `error: extraVolume pss: ${dir}/absent.yaml is missing, but its pathType File needs a file\n`,
    );
    const directory = await inMachineNamespace(
      [{ name: 'cfg', hostPath: join(dir, 'policy.yaml'), mountPath: join(dir, 'cfg'), pathType: 'Directory' }],
      'echo started',
    );
    assert.match(
      directory.out,
      /^error: extraVolume cfg: .*policy\.yaml is a file, but its pathType Directory needs a directory\n$/,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
