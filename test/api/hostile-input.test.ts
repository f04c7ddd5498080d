import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

/**
 * Hostile and careless input to `capt apply`, through the real binary: each is refused with exit 2, a message
 * that says what is wrong and where, in bounded memory (a heap cap the process would die of, and its peak
 * resident size) and without hanging. Temporal's address is a closed port, so an input that got past the
 * loader would fail to connect (exit 1) instead: exit 2 proves nothing was submitted.
 */
const cli = join(__dirname, '../../src/cli/main.js');
const root = join(__dirname, '../../..');
const quickstart = readFileSync(join(root, 'examples/quickstart.yaml'), 'utf8');
let dir: string;

/** The quickstart with `change` applied to its text. */
const variant = (change: (text: string) => string) => change(quickstart);
const docs = quickstart.split(/^---\n/m);
const docOf = (kind: string) => docs.find((d) => new RegExp(`^kind: ${kind}$`, 'm').test(d))!;
const clusterNamed = (name: string) => quickstart.replaceAll('${CLUSTER_NAME:=quickstart}', name);
const withClusterLabels = (labels: string) =>
  variant((t) => t.replace('kind: Cluster\nmetadata:\n', `kind: Cluster\nmetadata:\n  labels: ${labels}\n`));
const withClusterAnnotations = (annotations: string) =>
  variant((t) => t.replace('kind: Cluster\nmetadata:\n', `kind: Cluster\nmetadata:\n  annotations: ${annotations}\n`));
const document = (apiVersion: string, kind: string) =>
  `apiVersion: ${apiVersion}\nkind: ${kind}\nmetadata:\n  name: x\n`;

interface Case {
  name: string;
  /** File content, or a path to give as -f (from `setup`). */
  content?: string;
  path?: string;
  args?: string[];
  env?: Record<string, string>;
  expect: RegExp;
}

function cases(): Case[] {
  const mdDoc = docOf('MachineDeployment');
  const manyMds = Array.from({ length: 101 }, (_, i) =>
    mdDoc.replace(/name: \$\{CLUSTER_NAME:=quickstart\}-md-0\n {2}namespace/, `name: quickstart-md-${i}\n  namespace`),
  ).join('---\n');
  return [
    {
      name: '61 MiB of empty documents',
      content: '---\n{}\n'.repeat(8 << 20),
      expect: /-f .*: \d+ bytes, over the 4 MiB all manifests of one apply may take/,
    },
    {
      name: 'a 50 MiB annotation',
      content: withClusterAnnotations(`{big: "${'x'.repeat(50 << 20)}"}`),
      expect: /over the 4 MiB/,
    },
    { name: '/dev/zero', path: '/dev/zero', expect: /-f \/dev\/zero: not a regular file/ },
    { name: 'a FIFO', path: 'fifo', expect: /-f .*fifo: not a regular file/ },
    { name: 'a folder without manifests', path: 'empty-folder', expect: /the folder holds no \.yaml or \.yml file/ },
    { name: 'an empty file', content: '', expect: /no manifests found \(empty\)/ },
    {
      name: 'only separators and comments',
      content: '---\n# nothing\n---\n',
      expect: /no manifests found: every document is empty/,
    },
    { name: 'a missing file', path: 'no-such.yaml', expect: /-f .*no-such\.yaml: no such file or directory/ },
    {
      name: 'a path through a file',
      path: 'plain.yaml/x.yaml',
      expect: /-f .*plain\.yaml\/x\.yaml: .*not a directory/,
    },
    {
      name: '1001 documents',
      content: Array.from({ length: 1001 }, () => 'a: 1\n').join('---\n'),
      expect: /1001 documents, more than the 1000 one apply takes/,
    },
    {
      name: 'the payload key from the environment',
      content: withClusterAnnotations('{leak: "${CAPT_CODEC_KEYS}"}'),
      env: { CAPT_CODEC_KEYS: 'k:AAAA' },
      expect: /variable \$\{CAPT_CODEC_KEYS\} is not set[^]*one of capt's own settings or named like a secret/,
    },
    {
      name: 'a Temporal TLS key from the environment',
      content: withClusterAnnotations('{leak: "${TEMPORAL_TLS_KEY}"}'),
      env: { TEMPORAL_TLS_KEY: 'secret' },
      expect: /\$\{TEMPORAL_TLS_KEY\}[^]*pass --var TEMPORAL_TLS_KEY=value/,
    },
    {
      name: 'a secret-named variable from the environment',
      content: withClusterAnnotations('{leak: "${DB_PASSWORD}"}'),
      env: { DB_PASSWORD: 'hunter2' },
      expect: /\$\{DB_PASSWORD\} is not set/,
    },
    {
      name: 'a variable that is not set',
      content: withClusterAnnotations('{x: "${NOT_SET_ANYWHERE}"}'),
      expect: /variable \$\{NOT_SET_ANYWHERE\} is not set and has no default/,
    },
    {
      name: 'a billion replicas',
      content: variant((t) => t.replace('replicas: ${WORKER_MACHINE_COUNT:=2}', 'replicas: 1000000000')),
      expect:
        /MachineDeployment\/quickstart-md-0 at spec\.replicas: 1000000000 replicas is more than the 5000 machines one owner runs/,
    },
    {
      name: '5001 control-plane replicas',
      content: variant((t) => t.replace('replicas: ${CONTROL_PLANE_MACHINE_COUNT:=1}', 'replicas: 5001')),
      expect: /KubeadmControlPlane\/quickstart-control-plane at spec\.replicas: 5001 replicas is more than/,
    },
    {
      name: 'negative replicas',
      content: variant((t) => t.replace('replicas: ${WORKER_MACHINE_COUNT:=2}', 'replicas: -1')),
      expect: /spec\.replicas/,
    },
    {
      name: 'fractional replicas',
      content: variant((t) => t.replace('replicas: ${WORKER_MACHINE_COUNT:=2}', 'replicas: 1.5')),
      expect: /spec\.replicas/,
    },
    {
      name: 'two control-plane replicas',
      content: variant((t) => t.replace('replicas: ${CONTROL_PLANE_MACHINE_COUNT:=1}', 'replicas: 2')),
      expect: /2 replicas cannot keep etcd quorum/,
    },
    {
      name: '101 MachineDeployments',
      content: `${quickstart}\n---\n${manyMds}`,
      expect: /\d+ MachineDeployments, more than the 100 one cluster takes/,
    },
    {
      name: 'a NUL in a label key',
      content: withClusterLabels('{"a\\0b": "x"}'),
      expect: /at metadata\.labels\."a\\u0000b": label key "a\\u0000b": a key is an optional DNS-name prefix/,
    },
    {
      name: 'a newline in a label key',
      content: withClusterLabels('{"a\\nb": "x"}'),
      expect: /at metadata\.labels\."a\\nb": label key "a\\nb"/,
    },
    {
      name: 'an empty label key',
      content: withClusterLabels('{"": "x"}'),
      expect: /a key is an optional DNS-name prefix/,
    },
    {
      name: 'an ANSI escape in a label value',
      content: withClusterLabels('{a: "\\e[31mred"}'),
      expect: /a label value is at most 63 letters/,
    },
    {
      name: 'a 64-character label value',
      content: withClusterLabels(`{a: "${'v'.repeat(64)}"}`),
      expect: /a label value is at most 63/,
    },
    {
      name: 'an annotation key starting with a dot',
      content: withClusterAnnotations('{".bad": "x"}'),
      expect: /a key is an optional DNS-name prefix/,
    },
    {
      name: 'a label key prefix that is no DNS name',
      content: withClusterLabels('{"Bad_Prefix/a": "x"}'),
      expect: /a key is an optional DNS-name prefix/,
    },
    {
      name: '300 KiB of annotations',
      content: withClusterAnnotations(`{a: "${'x'.repeat(300 << 10)}"}`),
      expect: /annotations are over 256 KiB together/,
    },
    {
      name: 'a model over 1 MiB',
      content: variant((t) =>
        t.replace(
          '  kubeadmConfigSpec:\n',
          `  kubeadmConfigSpec:\n    files: [{path: /etc/big, content: "${'y'.repeat(1200 << 10)}"}]\n`,
        ),
      ),
      expect: /cluster quickstart comes to \d+ bytes as capt sends it, over 1024 KiB/,
    },
    {
      name: 'kind constructor',
      content: document('cluster.x-k8s.io/v1beta2', 'constructor'),
      expect: /kind constructor \(cluster\.x-k8s\.io\/v1beta2\) is not a kind capt manages/,
    },
    {
      name: 'kind __proto__',
      content: document('cluster.x-k8s.io/v1beta2', '__proto__'),
      expect: /kind __proto__ .* is not a kind capt manages/,
    },
    {
      name: 'kind toString of the infrastructure group',
      content: document('infrastructure.cluster.x-k8s.io/v1beta2', 'toString'),
      expect: /kind toString is not served by any installed provider/,
    },
    {
      name: 'an apiVersion with a third part',
      content: docs[0]!.replace('cluster.x-k8s.io/v1beta2', 'cluster.x-k8s.io/v1beta2/extra'),
      expect: /apiVersion "cluster\.x-k8s\.io\/v1beta2\/extra" is not GROUP\/VERSION/,
    },
    {
      name: 'an apiVersion without a version',
      content: docs[0]!.replace('cluster.x-k8s.io/v1beta2', 'cluster.x-k8s.io'),
      expect: /is not GROUP\/VERSION/,
    },
    { name: 'YAML that does not parse', content: 'kind: "Cluster\n', expect: /\(document 1\).*not valid YAML/ },
    { name: 'a list instead of a mapping', content: '- a\n- b\n', expect: /a manifest must be a mapping/ },
    {
      name: 'an alias bomb',
      content: `a: &a ["x","x","x","x","x","x","x","x","x"]\n${Array.from(
        { length: 12 },
        (_, i) =>
          `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [${Array(9)
            .fill(`*${String.fromCharCode(97 + i)}`)
            .join(',')}]`,
      ).join('\n')}\n`,
      expect: /\(document 1\): not valid YAML: Excessive alias count/,
    },
    {
      name: 'deep nesting',
      content: `a: ${'['.repeat(20000)}${']'.repeat(20000)}\n`,
      expect: /not valid YAML|apiVersion is missing|kind is missing/,
    },
    {
      name: 'a 64-character cluster name',
      content: clusterNamed('c'.repeat(64)),
      expect:
        /Cluster\/c{64} at metadata\.name: the name is 64 characters; .*label value, which Kubernetes limits to 63/,
    },
    {
      name: 'a 254-character name',
      content: clusterNamed(`${'a'.repeat(200)}.${'b'.repeat(53)}`),
      expect: /metadata\.name/,
    },
    { name: 'an uppercase name', content: clusterNamed('Quick'), expect: /must be a lowercase DNS name/ },
    { name: 'a name with a path in it', content: clusterNamed('../etc'), expect: /must be a lowercase DNS name/ },
    {
      name: 'maxSurge and maxUnavailable both 0',
      content: variant((t) =>
        t.replace('maxSurge: 1\n        maxUnavailable: 0', 'maxSurge: 0\n        maxUnavailable: 0'),
      ),
      expect: /maxSurge and maxUnavailable are both 0/,
    },
    {
      name: 'a CIDR with octets past 255',
      content: variant((t) => t.replace('${SERVICE_CIDR:=10.96.0.0/12}', '999.999.999.999/99')),
      expect:
        /at spec\.clusterNetwork\.services\.cidrBlocks\[0\]: "999\.999\.999\.999\/99" each of its four numbers must be 0 to 255/,
    },
    {
      name: 'a loopback pod network',
      content: variant((t) => t.replace('${POD_CIDR:=10.244.0.0/16}', '127.0.0.0/8')),
      expect: /"127\.0\.0\.0\/8" is loopback/,
    },
    {
      name: 'a link-local service network',
      content: variant((t) => t.replace('${SERVICE_CIDR:=10.96.0.0/12}', '169.254.0.0/16')),
      expect: /is link-local/,
    },
    {
      name: 'service and pod networks that overlap',
      content: variant((t) => t.replace('${POD_CIDR:=10.244.0.0/16}', '10.96.0.0/16')),
      expect: /the pod network 10\.96\.0\.0\/16 overlaps the service network 10\.96\.0\.0\/12/,
    },
    {
      name: 'a version the provider cannot run',
      content: variant((t) => t.replaceAll('${KUBERNETES_VERSION:=v1.36.3}', 'v1.999.0')),
      expect:
        /KubeadmControlPlane\/quickstart-control-plane at spec\.version: Kubernetes v1\.999\.0 is not one the local provider can run\n {2}hint: use one of v1\.\d+\.\d+/,
    },
    {
      name: 'gzip-encoded files',
      content: variant((t) =>
        t.replace(
          '  kubeadmConfigSpec:\n',
          '  kubeadmConfigSpec:\n    files: [{path: /etc/x, encoding: gzip, content: H4sI}]\n',
        ),
      ),
      expect: /files\[0\]\.encoding: only base64 encoding is decoded/,
    },
    {
      name: 'a file owner other than root',
      content: variant((t) =>
        t.replace(
          '  kubeadmConfigSpec:\n',
          '  kubeadmConfigSpec:\n    files: [{path: /etc/x, owner: "nobody:nogroup", content: x}]\n',
        ),
      ),
      expect: /files\[0\]\.owner: files are written as root/,
    },
    {
      name: 'users',
      content: variant((t) => t.replace('  kubeadmConfigSpec:\n', '  kubeadmConfigSpec:\n    users: [{name: ops}]\n')),
      expect: /users are not created by capt's providers/,
    },
    {
      name: 'ntp',
      content: variant((t) =>
        t.replace('  kubeadmConfigSpec:\n', '  kubeadmConfigSpec:\n    ntp: {servers: [pool.ntp.org]}\n'),
      ),
      expect: /ntp is not configured by capt's providers/,
    },
    {
      name: "an apiServer flag that would move the machine's apiserver off its port",
      content: variant((t) =>
        t.replace(
          '  kubeadmConfigSpec:\n',
          '  kubeadmConfigSpec:\n    clusterConfiguration: {apiServer: {extraArgs: [{name: secure-port, value: "1"}]}}\n',
        ),
      ),
      expect: /apiServer\.extraArgs\[0\]: --secure-port of kube-apiserver is set by capt from the machine/,
    },
    {
      name: 'a ClusterConfiguration field capt does not carry out',
      content: variant((t) =>
        t.replace(
          '  kubeadmConfigSpec:\n',
          '  kubeadmConfigSpec:\n    clusterConfiguration: {etcd: {local: {dataDir: /x}}}\n',
        ),
      ),
      expect: /unknown field 'etcd'/,
    },
    {
      name: 'one Node name for every replica',
      content: variant((t) =>
        t.replace(
          '    initConfiguration:\n      nodeRegistration:\n',
          '    initConfiguration:\n      nodeRegistration:\n        name: same-node\n',
        ),
      ),
      expect:
        /initConfiguration\.nodeRegistration\.name: every machine made from this spec would get the same Node name/,
    },
    {
      name: 'a max-pods no kubelet would run with',
      content: variant((t) =>
        t.replace(
          '            - name: node-labels\n',
          '            - name: max-pods\n              value: "0"\n            - name: node-labels\n',
        ),
      ),
      expect:
        /joinConfiguration\.nodeRegistration\.kubeletExtraArgs\[0\]\.value: max-pods "0" is not a whole number from 1 to 10000/,
    },
    {
      name: 'an unknown field',
      content: variant((t) =>
        t.replace('  replicas: ${CONTROL_PLANE_MACHINE_COUNT:=1}', '  replicas: 1\n  replica: 3'),
      ),
      expect: /unknown field 'replica'/,
    },
  ];
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'capt-hostile-'));
  execFileSync('mkfifo', [join(dir, 'fifo')]);
  await mkdir(join(dir, 'empty-folder'));
  await writeFile(join(dir, 'plain.yaml'), quickstart);
});
after(() => rm(dir, { recursive: true, force: true }));

test('at least 40 hostile inputs: each exits 2 with what is wrong and where, in bounded time and memory, and submits nothing', async () => {
  const all = cases();
  assert.ok(all.length >= 40, `${all.length} cases`);
  const failures: string[] = [];
  for (const [i, c] of all.entries()) {
    const file = c.path ? (c.path.startsWith('/') ? c.path : join(dir, c.path)) : join(dir, `case-${i}.yaml`);
    if (c.content !== undefined) await writeFile(file, c.content);
    // The heap cap makes unbounded memory a crash (not exit 2); the timeout makes a hang a failure.
    const run = spawnSync(
      '/usr/bin/time',
      [
        '-f',
        'maxrss-kib %M',
        process.execPath,
        '--max-old-space-size=256',
        cli,
        'apply',
        '-f',
        file,
        ...(c.args ?? []),
      ],
      {
        env: { ...process.env, TEMPORAL_ADDRESS: '127.0.0.1:1', CAPT_HOME: join(dir, 'home'), ...c.env },
        encoding: 'utf8',
        timeout: 60_000,
        maxBuffer: 64 << 20,
      },
    );
    const rss = Number(/maxrss-kib (\d+)/.exec(run.stderr ?? '')?.[1] ?? 0);
    const stderr = (run.stderr ?? '').replace(/maxrss-kib \d+\n?/, '');
    if (run.status !== 2 || !c.expect.test(stderr) || rss > 512 << 10) {
      failures.push(`${c.name}: exit ${run.status ?? run.signal}, ${rss} KiB, stderr: ${stderr.slice(0, 400)}`);
    }
    if (c.content !== undefined && !c.path) await rm(file);
  }
  assert.deepEqual(failures, []);
});
