import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { renderCloudInitScript, shellQuote } from '../../providers/local/cloud-init/cloud-init-script';

const knobs = { bootDelaySeconds: 0, failBootstrap: false };
const userData = `## template: jinja
#cloud-config
write_files:
- path: /etc/kubernetes/pki/ca.key
  permissions: '0600'
  content: |
    it's "secret"
    EOF
- path: /etc/motd
  append: true
  encoding: b64
  content: aGVsbG8K
runcmd:
- echo 'single' "double" $HOME \\back
- [touch, "/tmp/it's here"]
- kubeadm join --config /run/kubeadm/kubeadm-join-config.yaml && echo success > /run/cluster-api/bootstrap-success.complete
`;

/** The report a step leaves when it fails: its rendered prefix completed as the script completes it. */
function failureReports(script: string): unknown[] {
  return [...script.matchAll(/^step ('(?:[^']|'\\'')*')/gm)].map((m) =>
    JSON.parse(execFileSync('/bin/sh', ['-c', `printf '%s' ${m[1]}`]).toString() + ',"exitCode":3}'),
  );
}

test('shellQuote stands for its string exactly in /bin/sh', () => {
  for (const s of ["it's", `a "b" $c \`d\` \\e`, '', "''", 'line\nbreak']) {
    assert.equal(execFileSync('/bin/sh', ['-c', `printf '%s' ${shellQuote(s)}`]).toString(), s);
  }
});

test('the script is valid sh, writes each file from base64 and reports each step by its command', () => {
  const script = renderCloudInitScript(userData, knobs);
  execFileSync('/bin/sh', ['-n', '-c', script]);
  assert.match(script, new RegExp(`<<'EOF'\n${Buffer.from('it\'s "secret"\nEOF\n').toString('base64')}\nEOF`));
  assert.match(script, /write_file '\/etc\/motd' '' append <<'EOF'\naGVsbG8K\nEOF/);
  assert.deepEqual(failureReports(script), [
    { state: 'failed', command: 'write_files /etc/kubernetes/pki/ca.key', exitCode: 3 },
    { state: 'failed', command: 'write_files /etc/motd', exitCode: 3 },
    { state: 'failed', command: `echo 'single' "double" $HOME \\back`, exitCode: 3 },
    { state: 'failed', command: `'touch' '/tmp/it'\\''s here'`, exitCode: 3 },
    {
      state: 'failed',
      command:
        'kubeadm join --config /run/kubeadm/kubeadm-join-config.yaml && echo success > /run/cluster-api/bootstrap-success.complete',
      exitCode: 3,
    },
  ]);
});

test('failBootstrap, unparsable user-data and unsupported encodings fail their step with the reason', () => {
  const failed = renderCloudInitScript(userData, { bootDelaySeconds: 2, failBootstrap: true });
  assert.match(failed, /^sleep 2$/m);
  assert.deepEqual(failureReports(failed), [{ state: 'failed', command: '(boot)', exitCode: 3 }]);
  assert.match(failed, /fail 'LocalMachineTemplate spec.failBootstrap is set/);
  assert.deepEqual(failureReports(renderCloudInitScript('- not\n- a mapping\n', knobs)), [
    { state: 'failed', command: '(cloud-init)', exitCode: 3 },
  ]);
  const gzip = renderCloudInitScript(
    '#cloud-config\nwrite_files:\n- path: /x\n  encoding: gzip\n  content: abc\n',
    knobs,
  );
  assert.deepEqual(failureReports(gzip), [{ state: 'failed', command: 'write_files /x', exitCode: 3 }]);
  assert.match(gzip, /encoding '\\''gzip'\\'' is not supported/);
});

test('write_files creates a file in its final mode or narrower: a key is never readable by others while written', async () => {
  const script = renderCloudInitScript(userData, knobs);
  const start = script.indexOf('write_file() {');
  const writeFileFn = script.slice(start, script.indexOf('\n}\n', start) + 3);
  const dir = await mkdtemp(join(tmpdir(), 'capt-write-file-'));
  // The content's producer reports the file's mode while write_file is writing it.
  const modeWhileWriting = (path: string, mode: string) =>
    spawnSync('/bin/sh', [
      '-c',
      `${writeFileFn}\n(sleep 0.2; stat -c %a ${shellQuote(path)} >&2; echo aGkK) | write_file ${shellQuote(path)} ${shellQuote(mode)} replace`,
    ])
      .stderr.toString()
      .trim();
  const modeOf = async (path: string) => ((await stat(path)).mode & 0o777).toString(8);
  try {
    const key = join(dir, 'pki/ca.key');
    assert.equal(modeWhileWriting(key, '0600'), '600', 'a new key is 0600 while written');
    assert.equal(await modeOf(key), '600');
    await writeFile(key, 'old', { mode: 0o644 });
    assert.equal(
      modeWhileWriting(key, '0600'),
      '600',
      'replacing a world-readable file does not write the key into it',
    );
    assert.equal(await modeOf(key), '600');
    assert.equal(await readFile(key, 'utf8'), 'hi\n');
    const plain = join(dir, 'plain');
    assert.equal(modeWhileWriting(plain, ''), '600');
    assert.equal(await modeOf(plain), '644', "cloud-init's default mode once written");
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
