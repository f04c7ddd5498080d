import assert from 'node:assert/strict';
import { chown, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { CertificateRow } from '../../src/client/certificate-rows';
import { readJson } from '../../src/util/files';
import { createCertificateAuthority } from '../../src/pki/certificates';
import {
  clusterDir,
  machineDir,
  machineRecordPath,
  machineRoot,
  type LocalMachineRecord,
} from '../../providers/local/layout';
import { runCapt } from '../fixtures/capt-cli';
import { MachineHarness } from '../fixtures/machine-harness';
import { until } from '../fixtures/until';

const root = join(__dirname, '../../..');
const h = new MachineHarness();
const capt = (...args: string[]) => runCapt({ TEMPORAL_ADDRESS: h.env.address, CAPT_HOME: h.home }, ...args);

before(() => h.start());
after(() => h.stop());

const days = (r: CertificateRow) => Math.floor((Date.parse(r.notAfter!) - Date.now()) / 86_400_000);
const listed = async (...args: string[]) => {
  const got = await capt('get', 'certificates', ...args, '-o', 'json');
  assert.equal(got.code, 0, got.stderr);
  return (JSON.parse(got.stdout) as { items: CertificateRow[] }).items;
};

test("capt get certificates: every cluster's CAs and every machine's certificates with their expiry, soonest first; a machine's file that is no certificate is named, one linked out of the machine is not read; a rotation replaces only the machines whose certificates expire soon", async () => {
  const vars = ['--var', 'CLUSTER_NAME=certs', '--var', 'WORKER_MACHINE_COUNT=2'];
  const applied = await capt(
    'apply',
    '-f',
    join(root, 'examples/quickstart.yaml'),
    ...vars,
    '--wait',
    '--timeout',
    '5m',
  );
  assert.equal(applied.code, 0, applied.stderr);
  const machines = JSON.parse((await capt('get', 'machines', '-o', 'json')).stdout).items as {
    name: string;
    labels: Record<string, string>;
  }[];
  const cp = machines.find((m) => 'cluster.x-k8s.io/control-plane' in m.labels)!.name;
  const workers = machines
    .filter((m) => !('cluster.x-k8s.io/control-plane' in m.labels))
    .map((m) => m.name)
    .sort();
  const [renewedWorker, worker] = workers as [string, string];

  // A worker's kubelet certificate follows its join in the background: a moment after it runs, at most.
  const rows = await until("the workers' kubelet certificates", async () => {
    const got = await listed('-A');
    return workers.every((w) => got.some((r) => r.machine === w)) ? got : undefined;
  });
  const of = (machine: string | undefined) => rows.filter((r) => r.machine === machine);
  // The cluster's own, from its secrets: CAs for ten years (kubeadm's), capt's admin certificate for one.
  assert.deepEqual(
    of(undefined)
      .map((r) => [r.certificate, days(r)])
      .sort(),
    [
      ['ca', 3649],
      ['capt-admin', 364],
      ['etcd-ca', 3649],
      ['front-proxy-ca', 3649],
    ],
  );
  // The control-plane machine's, by kubeadm's names, each for a year; the apiserver's names the apiserver.
  assert.deepEqual(
    of(cp)
      .map((r) => r.certificate)
      .sort(),
    [
      'admin.conf',
      'apiserver',
      'apiserver-etcd-client',
      'apiserver-kubelet-client',
      'controller-manager.conf',
      'etcd-peer',
      'etcd-server',
      'front-proxy-client',
      'kubelet-client',
      'scheduler.conf',
    ],
  );
  assert.ok(
    of(cp).every((r) => r.namespace === 'default' && r.cluster === 'certs' && days(r) === 364),
    JSON.stringify(of(cp)),
  );
  assert.match(of(cp).find((r) => r.certificate === 'apiserver')!.subject!, /CN=kube-apiserver/);
  for (const w of workers)
    assert.deepEqual(
      of(w).map((r) => r.certificate),
      ['kubelet-client'],
    );
  const ends = rows.map((r) => r.notAfter!);
  assert.deepEqual(ends, [...ends].sort(), 'soonest to expire first');
  assert.equal(rows.length, 4 + 10 + 2);

  const table = (await capt('get', 'certificates')).stdout.trim().split('\n');
  assert.match(table[0]!, /^NAMESPACE\s+CLUSTER\s+MACHINE\s+CERTIFICATE\s+EXPIRES\s+RESIDUAL$/);
  assert.match(table.at(-1)!, /^default\s+certs\s+\(cluster\)\s+(ca|etcd-ca|front-proxy-ca)\s+\S+Z\s+3649d$/);
  assert.deepEqual(await listed('-n', 'elsewhere'), [], 'another namespace has none');

  // The machine writes its own files: one that is no certificate is named first; a link out of the machine (here
  // to a host certificate valid ten years) is not followed, so its certificate is not listed.
  const mdir = machineDir(clusterDir('default', 'certs'), cp);
  const { hostId } = (await readJson<LocalMachineRecord>(machineRecordPath(mdir)))!;
  const pki = join(machineRoot(mdir), 'etc/kubernetes/pki');
  await writeFile(join(pki, 'front-proxy-client.crt'), 'not a certificate\n');
  await chown(join(pki, 'front-proxy-client.crt'), hostId!, hostId!);
  const host = await mkdtemp(join(tmpdir(), 'capt-host-cert-'));
  try {
    await writeFile(join(host, 'host.crt'), (await createCertificateAuthority('a host certificate')).cert);
    await rm(join(pki, 'etcd/peer.crt'));
    await symlink(join(host, 'host.crt'), join(pki, 'etcd/peer.crt'));
    const after = await listed();
    assert.deepEqual(after[0], {
      namespace: 'default',
      cluster: 'certs',
      machine: cp,
      certificate: 'front-proxy-client',
      problem: 'not a certificate',
    });
    assert.equal(after.filter((r) => r.machine === cp && r.certificate === 'etcd-peer').length, 0);
    assert.ok(!after.some((r) => r.subject?.includes('a host certificate')));
    const problem = (await capt('get', 'certificates')).stdout.split('\n')[1]!;
    assert.match(problem, new RegExp(`^default\\s+certs\\s+${cp}\\s+front-proxy-client\\s+not a certificate$`));
  } finally {
    await rm(host, { recursive: true, force: true });
  }

  // One worker's kubelet renewed its certificate (kubelets rotate their own), for ten years here: nothing to replace.
  const renewed = machineDir(clusterDir('default', 'certs'), renewedWorker);
  const renewedPem = join(machineRoot(renewed), 'var/lib/kubelet/pki/kubelet-client-current.pem');
  const { hostId: renewedHost } = (await readJson<LocalMachineRecord>(machineRecordPath(renewed)))!;
  await writeFile(renewedPem, (await createCertificateAuthority('a renewed kubelet certificate')).cert);
  await chown(renewedPem, renewedHost!, renewedHost!);

  // A rotation replaces, in each owner, the machines whose certificates expire within --within days, and no other.
  const none = await capt('rotate', 'certificates', 'certs', '--within', '30');
  assert.equal(none.code, 0, none.stderr);
  assert.match(
    none.stdout,
    /no owner of cluster default\/certs has a machine whose certificates expire within 30 days/,
  );
  const dry = await capt('rotate', 'certificates', 'certs', '--within', '400', '--dry-run');
  assert.equal(dry.code, 0, dry.stderr);
  const would = dry.stdout.split('\n').filter((l) => l.includes('would replace'));
  assert.deepEqual(would.sort(), [
    `kubeadmcontrolplane/certs-control-plane would replace 1 machine(s) with certificates expiring within 400 days: ${cp}`,
    `machinedeployment/certs-md-0 would replace 1 machine(s) with certificates expiring within 400 days: ${worker}`,
  ]);
  // capt's admin certificate lasts a year, and no rollout renews it: said, not done.
  assert.match(dry.stdout, /^not rotated: the cluster's own certificates that expire within 400 days/m);
  assert.match(dry.stdout, /^default\s+certs\s+\(cluster\)\s+capt-admin\s/m);
  const before = await listed();
  const rotated = await capt('rotate', 'certificates', 'certs', '--within', '400', '--wait', '--timeout', '5m');
  assert.equal(rotated.code, 0, rotated.stderr);
  assert.match(
    rotated.stdout,
    new RegExp(`kubeadmcontrolplane/certs-control-plane replacing 1 machine\\(s\\) .*: ${cp}`),
  );
  assert.match(rotated.stdout, new RegExp(`machinedeployment/certs-md-0 replacing 1 machine\\(s\\) .*: ${worker}`));
  const replaced = await until("the new machines' certificates", async () => {
    const got = await listed();
    return got.filter((r) => r.machine).length === 10 + 2 ? got : undefined;
  });
  const machinesNow = new Set(replaced.filter((r) => r.machine).map((r) => r.machine));
  assert.ok(
    !machinesNow.has(cp) && !machinesNow.has(worker) && machinesNow.has(renewedWorker),
    `the two expiring machines replaced, the renewed worker kept: ${[...machinesNow].join(', ')}`,
  );
  const latest = (rows: CertificateRow[]) =>
    rows
      .filter((r) => r.machine)
      .map((r) => r.notAfter!)
      .sort()[0]!;
  assert.ok(latest(replaced) > latest(before), 'every machine certificate now ends later than the oldest before');
  assert.deepEqual(
    replaced.filter((r) => !r.machine),
    before.filter((r) => !r.machine),
    "the cluster's own are unchanged",
  );

  const deleted = await capt('delete', 'cluster', 'certs', '--wait', '--timeout', '5m');
  assert.equal(deleted.code, 0, deleted.stderr);
});
