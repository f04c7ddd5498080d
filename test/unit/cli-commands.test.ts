import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { promisify } from 'node:util';

// The real binary, as a user runs it: none of these reach Temporal, so they run anywhere.
const cli = join(__dirname, '../../src/cli/main.js');
const capt = (...args: string[]) =>
  promisify(execFile)(process.execPath, [cli, ...args], {
    env: { ...process.env, TEMPORAL_ADDRESS: '127.0.0.1:1' },
  }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => e,
  );
const dir = mkdtempSync(join(tmpdir(), 'capt-cli-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** What a shell's completion offers for `line`, the last word being the one completed. */
function bashCompletes(script: string, line: string[]): string[] {
  const file = join(dir, 'capt.bash');
  writeFileSync(file, script);
  const words = line.map((w) => `'${w}'`).join(' ');
  const offered = execFileSync(
    'bash',
    [
      '-c',
      `source ${file}; [ "$(complete -p capt)" = 'complete -F _capt capt' ] || exit 3
COMP_WORDS=(${words}); COMP_CWORD=${line.length - 1}; _capt; printf '%s\\n' "\${COMPREPLY[@]}"`,
    ],
    { encoding: 'utf8' },
  );
  return offered.split('\n').filter(Boolean);
}

test('capt rollout status --help lists its own flags with their defaults, and no other command’s', async () => {
  const r = await capt('rollout', 'status', '--help');
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^Usage: capt rollout status \[options\] <KIND\/NAME>/);
  assert.match(r.stdout, /--timeout <DURATION>\s+how long to wait .*\(default: "15m"\)/);
  assert.match(r.stdout, /-w, --watch\s/);
  assert.match(r.stdout, /-n, --namespace <NS>\s+namespace \(default: "default"\)/);
  for (const other of ['--flavor', '--replicas', '--filename', '--persistence', '--to-revision'])
    assert.ok(!r.stdout.includes(other), `${other} is not a flag of rollout status:\n${r.stdout}`);
});

test('capt --help lists every command; capt alone does too, and exits 2', async () => {
  const commands = [
    'apply',
    'get',
    'describe',
    'delete',
    'annotate',
    'repair',
    'kubeconfig',
    'scale',
    'rollout',
    'rotate',
  ];
  const more = [
    'generate',
    'health',
    'init',
    'versions',
    'dev',
    'codec',
    'bridge',
    'codec-server',
    'worker',
    'upgrade',
    'quickstart',
    'completion',
  ];
  const help = await capt('--help');
  assert.equal(help.code, 0, help.stderr);
  const listed = /\nCommands:\n([^]*?)\n\n/.exec(help.stdout)?.[1] ?? '';
  const names = [...listed.matchAll(/^ {2}(\S+)/gm)].map((m) => m[1]);
  assert.deepEqual(names, [...commands, ...more]);
  const alone = await capt();
  assert.equal(alone.code, 2);
  assert.equal(alone.stdout, help.stdout);
});

test('bad usage exits 2 naming the flag, command or argument, and where help is', async () => {
  const cases: [string[], string][] = [
    [
      ['rollout', 'status', 'md/x', '--flavor', 'ha'],
      "error: unknown option '--flavor'; run capt rollout status --help",
    ],
    [['frobnicate'], "error: unknown command 'frobnicate'; run capt --help"],
    [['rollout', 'stat', 'md/x'], "error: unknown command 'stat' (Did you mean status?); run capt rollout --help"],
    [['describe', 'cluster'], "error: missing required argument 'NAME'; run capt describe cluster --help"],
    [['health'], 'error: capt health needs a command: cluster, clusters; run capt health --help'],
    [
      ['worker', 'stray'],
      "error: too many arguments for 'worker'. Expected 0 arguments but got 1; run capt worker --help",
    ],
    [
      ['worker', '--metrics-address', 'localhost:9464'],
      'error: --metrics-address localhost:9464: localhost: not an IP address of this host, e.g. 0.0.0.0:9443',
    ],
    [['dev', 'start', '--temporal-nodes', '7'], 'error: --temporal-nodes 7: give a whole number from 1 to 5'],
    [
      ['worker', '--max-cached-workflows', '1'],
      'error: --max-cached-workflows 1: give a whole number of workflow runs to keep cached, at least 2 (default 2000)',
    ],
    [
      ['completion', 'fish'],
      "error: command-argument value 'fish' is invalid for argument 'SHELL'. Allowed choices are bash, zsh; run capt completion --help",
    ],
  ];
  for (const [args, message] of cases) {
    const r = await capt(...args);
    assert.deepEqual([r.code, r.stderr.trim()], [2, message], `capt ${args.join(' ')}`);
  }
});

test('capt annotate machine refuses a malformed argument or key, naming it, before it connects (exit 2)', async () => {
  const rule =
    'a key is an optional DNS-name prefix and "/", then 1 to 63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit';
  const cases: [string[], string][] = [
    [['m1'], "error: missing required argument 'KEY=VALUE|KEY-'; run capt annotate machine --help"],
    [
      ['m1', 'a=1', 'team'],
      'error: annotate machine m1: "team": write KEY=VALUE to set an annotation or KEY- to remove one',
    ],
    [['m1', 'bad key=1'], `error: annotate machine m1: "bad key=1": annotation key "bad key": ${rule}`],
    [['m1', '-'], `error: annotate machine m1: "-": annotation key "": ${rule}`],
    [['m1', 'a=1', 'a-'], 'error: annotate machine m1: "a-": a is named twice; name each key once'],
  ];
  for (const [args, message] of cases) {
    const r = await capt('annotate', 'machine', ...args);
    assert.deepEqual([r.code, r.stderr.trim()], [2, message], `capt annotate machine ${args.join(' ')}`);
  }
});

test("capt bridge's webhook flags are refused, naming them, before it connects (exit 2)", async () => {
  const cases: [string[], string][] = [
    [
      ['--webhook-secret', 'capt-system/capt-webhook-serving', '--webhook-port', '0'],
      'error: --webhook-port and --webhook-secret: choose one (--webhook-port registers webhooks of its own on 127.0.0.1, as capt dev start does; --webhook-secret serves those capt init --webhook-url registered)',
    ],
    [
      ['--webhook-listen', '0.0.0.0:9443'],
      'error: --webhook-listen goes with --webhook-secret NAMESPACE/NAME (what capt init --webhook-url made)',
    ],
    [
      ['--webhook-secret', 'capt-webhook-serving'],
      "error: --webhook-secret capt-webhook-serving: expected NAMESPACE/NAME, e.g. capt-system/capt-webhook-serving (capt init's)",
    ],
    [
      ['--webhook-secret', 'capt-system/../x'],
      `error: --webhook-secret capt-system/../x: expected NAMESPACE/NAME, e.g. capt-system/capt-webhook-serving (capt init's)`,
    ],
    [
      ['--webhook-secret', 'capt-system/Serving'],
      `error: --webhook-secret capt-system/Serving: name "Serving": lower-case letters, digits, '-' and '.', at most 253, e.g. capt-system/capt-webhook-serving (capt init's)`,
    ],
    [
      ['--webhook-secret', 'capt-system/capt-webhook-serving', '--webhook-listen', 'localhost:9443'],
      'error: --webhook-listen localhost:9443: localhost: not an IP address of this host, e.g. 0.0.0.0:9443',
    ],
    [
      ['--webhook-port', '0'],
      'error: --webhook-port needs --webhook-client-ca FILE: the CA of the client certificate the apiserver presents to webhooks (its --admission-control-config-file), so that only the apiserver is answered; --insecure-webhook-any-caller answers anyone',
    ],
    [
      ['--webhook-secret', 'capt-system/capt-webhook-serving', '--webhook-client-ca', 'ca.crt'],
      "error: --webhook-client-ca goes with --webhook-port alone (--webhook-secret takes the apiserver's client CA from the Secret)",
    ],
    [
      ['--webhook-port', '0', '--webhook-client-ca', 'ca.crt', '--insecure-webhook-any-caller'],
      'error: --webhook-client-ca goes with --webhook-port alone (--insecure-webhook-any-caller checks no caller)',
    ],
    [
      ['--insecure-webhook-any-caller'],
      'error: --insecure-webhook-any-caller goes with --webhook-port or --webhook-secret',
    ],
  ];
  for (const [args, message] of cases) {
    const r = await capt('bridge', '--kubeconfig', join(dir, 'none'), ...args);
    assert.deepEqual([r.code, r.stderr.trim()], [2, message], `capt bridge ${args.join(' ')}`);
  }
});

test('capt completion bash: a bash script whose _capt completes commands, subcommands, flags and choices', async () => {
  const r = await capt('completion', 'bash');
  assert.equal(r.code, 0, r.stderr);
  execFileSync('bash', ['-n'], { input: r.stdout });
  const completes = (...line: string[]) => bashCompletes(r.stdout, ['capt', ...line]);
  assert.deepEqual(completes('rol'), ['rollout']);
  assert.deepEqual(completes('rollout', 'st'), ['status']);
  assert.deepEqual(completes('-v', 'rollout', 'status', '-n', 'ns', 'md/x', '--t'), [
    '--timeout',
    '--tls-cert',
    '--tls-key',
    '--tls-ca',
  ]);
  assert.deepEqual(completes('get', 'm'), ['machines', 'machine', 'machinedeployments', 'machinedeployment', 'md']);
  assert.deepEqual(completes('get', 'clusters', '-o', ''), ['table', 'wide', 'json', 'yaml']);
  assert.deepEqual(completes('worker', ''), ['status']);
  assert.deepEqual(completes('completion', ''), ['bash', 'zsh']);
  assert.deepEqual(completes('init', '--w'), ['--webhook-url']);
  assert.deepEqual(completes('bridge', '--webhook-'), [
    '--webhook-port',
    '--webhook-client-ca',
    '--webhook-secret',
    '--webhook-listen',
  ]);
});

test('capt completion zsh: a zsh script that registers _capt and completes as the bash one does', async () => {
  const r = await capt('completion', 'zsh');
  assert.equal(r.code, 0, r.stderr);
  const file = join(dir, 'capt.zsh');
  writeFileSync(file, r.stdout);
  execFileSync('zsh', ['-n', file]);
  const offered = execFileSync(
    'zsh',
    [
      '-f',
      '-c',
      `autoload -U compinit && compinit -u -D; source ${file}; print -r -- $_comps[capt]; __capt_complete rollout st; print -r -- $__capt_words`,
    ],
    { encoding: 'utf8' },
  );
  assert.deepEqual(offered.trim().split('\n'), ['_capt', 'status history undo pause resume restart']);
});
