import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { readFile, readdir, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import {
  clusterDir,
  machineDir,
  machineRecordPath,
  machineRoot,
  machinesDir,
  type LocalMachineRecord,
} from '../../providers/local/layout';
import { machineHostId } from '../../providers/local/machine-sandbox';
import { liveStartTime } from '../../src/util/processes';
import { runCapt } from '../fixtures/capt-cli';
import { processesMentioning } from '../fixtures/leaks';
import { MachineHarness } from '../fixtures/machine-harness';

/**
 * A manifest author is not the host's root: a cluster whose bootstrap commands (on the control plane and on
 * the workers) try the escapes a security review found on the old sandbox. Each attempt writes `held NAME`
 * when it fails and `ESCAPED NAME` when it works to /run/escapes in its machine; the cluster must still
 * become Available, and no marker may appear on the host.
 */
const h = new MachineHarness();
const root = join(__dirname, '../../..');
const capt = (...args: string[]) => runCapt({ TEMPORAL_ADDRESS: h.env.address, CAPT_HOME: h.home }, ...args);
const cluster = 'jail';
const marker = `capt-escape-${process.pid}`;
const hostMarkers = [
  `/${marker}`,
  `/usr/${marker}`,
  `/etc/${marker}`,
  `/sys/fs/cgroup/${marker}`,
  `/sys/fs/cgroup/pids/${marker}`,
];
/** A secret of the host's, in capt's home, that the machine must not read. */
let secretFile: string;
/** A host process whose pid the machines plant as pid files of their own: deleting them must not signal it. */
let bystander: ChildProcess;
let bystanderStart: string | undefined;

/** The first block device of the host, which no machine may read. */
function hostBlockDevice(): string {
  const names = readFileSync('/proc/partitions', 'utf8')
    .trim()
    .split('\n')
    .slice(2)
    .map((l) => l.trim().split(/\s+/)[3]!);
  const device = names.map((n) => `/dev/${n}`).find((d) => existsSync(d));
  assert.ok(device, 'the host has a block device to try');
  return device;
}

/** Each attempt succeeds (exit 0) only if the escape worked. */
function attempts(): Record<string, string> {
  return {
    // The bracket keeps pgrep from finding the shell that runs the attempt.
    'worker-environ': 'W=$(pgrep -of "worker-mai[n].js") && tr "\\0" "\\n" </proc/$W/environ | grep CAPT_',
    'worker-root': 'W=$(pgrep -of "worker-mai[n].js") && ls /proc/$W/root/',
    'any-environ': 'cat /proc/[0-9]*/environ 2>/dev/null | tr "\\0" "\\n" | grep -q CAPT_CODEC',
    'own-environ': 'env | grep -q "^CAPT_"',
    'host-secret': `cat ${secretFile}`,
    'capt-home': `ls -A ${h.home} | grep -q .`,
    'root-home': `ls -A ${homedir()}/.cache | grep -q .`,
    shadow: 'cat /etc/shadow',
    remount: 'mount -o remount,bind,rw /',
    'mount-host': 'mkdir -p /run/m && mount --bind / /run/m && touch /run/m/' + marker,
    'host-marker': `touch /${marker}`,
    'usr-marker': `touch /usr/${marker}`,
    nsenter: `nsenter -t 1 -a -- touch /${marker}`,
    // The host's own settings (not the ones a user or PID namespace has of its own), each written back with its value.
    'proc-sys':
      'for f in kernel/core_pattern kernel/hostname vm/swappiness fs/file-max net/ipv4/ip_forward; do v=$(cat /proc/sys/$f) && echo "$v" > /proc/sys/$f && exit 0; done; exit 1',
    sys: 'find /sys -maxdepth 4 -type f -writable 2>/dev/null | grep -q .',
    cgroup: `mkdir /sys/fs/cgroup/${marker} || mkdir /sys/fs/cgroup/pids/${marker}`,
    'raw-disk': `head -c 512 ${hostBlockDevice()} | wc -c | grep -q 512`,
    // Temporal's frontend on the host's loopback answers without credentials: machines must not reach it.
    temporal: `bash -c "exec 3<>/dev/tcp/${h.env.address.replace(':', '/')}"`,
    'host-processes': 'test "$(ls -d /proc/[0-9]* | wc -l)" -gt 50',
  };
}

/** Pids of the processes whose real user id is one of `ids`. */
async function processesOf(ids: number[]): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const uid = /^Uid:\s+(\d+)/m.exec(await readFile(`/proc/${entry}/status`, 'utf8').catch(() => ''))?.[1];
    if (uid !== undefined && ids.includes(Number(uid))) pids.push(Number(entry));
  }
  return pids;
}

function manifest(): string {
  const commands = Object.entries(attempts()).map(
    ([name, attempt]) =>
      `if ( ${attempt} ) >/dev/null 2>&1; then echo "ESCAPED ${name}"; else echo "held ${name}"; fi >> /run/escapes`,
  );
  // A pid record as the host writes its own, with the bystander's real start time: the strongest forgery.
  const record = JSON.stringify({ pid: bystander.pid, startTime: bystanderStart, command: 'sleep' });
  const planted = `mkdir -p /run/capt && echo '${record}' > /run/capt/planted.pid`;
  const pre = `preKubeadmCommands: ${JSON.stringify([...commands, `touch /etc/${marker}`, planted])}\n`;
  const text = readFileSync(join(root, 'examples/quickstart.yaml'), 'utf8');
  // Both the control plane's kubeadmConfigSpec and the workers' KubeadmConfigTemplate get the attempts; /etc is the machine's overlay, so its marker must stay off the host.
  const withPre = text
    .replace('  kubeadmConfigSpec:\n', `  kubeadmConfigSpec:\n    ${pre}`)
    .replace(/(kind: KubeadmConfigTemplate[^]*?\n {4}spec:\n)/, `$1      ${pre}`);
  assert.notEqual(withPre.split('preKubeadmCommands').length, 2, 'both the control plane and the workers try');
  return withPre;
}

before(async () => {
  // A group leader, as a worker started from a shell is: the signal a forged record would send reaches it.
  bystander = spawn('sleep', ['3600'], { stdio: 'ignore', detached: true });
  bystanderStart = await liveStartTime(bystander.pid!);
  assert.ok(bystanderStart, 'the bystander runs');
  await h.start();
  secretFile = join(h.home, 'host-secret');
  await writeFile(secretFile, 'not for machines\n', { mode: 0o600 });
});
after(async () => {
  bystander.kill('SIGKILL');
  await h.stop();
  // Should an escape have worked, the host keeps nothing of it.
  for (const path of hostMarkers)
    await rm(path, { recursive: true, force: true }).catch(() => rmdir(path).catch(() => undefined));
});

test("bootstrap commands cannot read the host's secrets, write its files or reach its processes (planted pid files included), and the cluster still becomes Available", async () => {
  const file = join(h.home, 'jail.yaml');
  await writeFile(file, manifest());
  const applied = await capt(
    'apply',
    '-f',
    file,
    '--var',
    `CLUSTER_NAME=${cluster}`,
    '--var',
    'WORKER_MACHINE_COUNT=1',
    '--wait',
    '--timeout',
    '8m',
  );
  assert.equal(applied.code, 0, applied.stderr);

  const cdir = clusterDir('default', cluster);
  const machines = await readdir(machinesDir(cdir));
  assert.equal(machines.length, 2, 'a control-plane machine and a worker');
  const names = Object.keys(attempts());
  const hostIds: number[] = [];
  for (const machine of machines) {
    const mdir = machineDir(cdir, machine);
    const log = (await readFile(join(machineRoot(mdir), 'run/escapes'), 'utf8')).trim().split('\n');
    assert.deepEqual(
      log.filter((l) => l.startsWith('ESCAPED')),
      [],
      `${machine}: every escape is held`,
    );
    assert.deepEqual(log.map((l) => l.split(' ')[1]).sort(), [...names].sort(), `${machine}: every attempt ran`);
    // The machine's root is an unprivileged id of its own on the host, not the host's root.
    const record = JSON.parse(await readFile(machineRecordPath(mdir), 'utf8')) as LocalMachineRecord;
    hostIds.push(machineHostId(record.ip));
    assert.equal((await stat(join(machineRoot(mdir), 'run/escapes'))).uid, hostIds.at(-1));
  }
  assert.ok((await processesOf(hostIds)).length > 0, "the control plane's processes run as its machine's own id");
  for (const path of hostMarkers) {
    assert.equal(existsSync(path), false, `${path} was not created on the host`);
  }

  const deleted = await capt('delete', 'cluster', cluster, '--wait');
  assert.equal(deleted.code, 0, deleted.stderr);
  assert.deepEqual(await processesMentioning([cdir]), [], 'no process of the cluster remains');
  assert.deepEqual(await processesOf(hostIds), [], "no process runs as a deleted machine's id");
  assert.equal(
    bystander.exitCode ?? bystander.signalCode,
    null,
    'the pid files the machines planted signalled nothing',
  );
});
