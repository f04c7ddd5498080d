import { chown, mkdir, writeFile } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { captHome } from '../../src/config/capt-home';
import { toolsDir } from '../../src/tools';

/** Host folders a machine may write; each is its own folder inside the machine's root (its /root hides the host's). */
const writable = ['run', 'var', 'tmp', 'home', 'root'];

/** The machine's mount table, in its root (which the machine itself never sees). */
const fstabName = '.sandbox.fstab';

/** Where a machine finds capt's tool cache (Kubernetes and etcd binaries), read-only. */
const toolsInMachine = '/run/capt/tools';

/** A path as fstab spells it: blanks and backslashes in octal. */
const fstabPath = (p: string) => p.replace(/[\\ \t\n]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`);

/**
 * The host user (and group) id a machine's root maps to: one per loopback address, so one per live machine,
 * far above the ids people and containers' subordinate ranges use. It owns nothing of the host's.
 */
export const firstMachineHostId = 2_000_000_000;
export const lastMachineHostId = firstMachineHostId + (1 << 24) - 1;
export function machineHostId(ip: string): number {
  const [, a, b, c] = ip.split('.').map(Number) as [number, number, number, number];
  return firstMachineHostId + ((a << 16) | (b << 8) | c);
}

/** The path a machine sees a host tool at (its metadata names binaries this way). */
export function toolPathInMachine(hostPath: string): string {
  const rel = relative(toolsDir(), hostPath);
  if (rel.startsWith('..') || rel.startsWith(sep))
    throw new Error(
      `${hostPath} is not in capt's tool cache ${toolsDir()}, so no machine can run it; run \`npm run setup\``,
    );
  return join(toolsInMachine, rel);
}

/**
 * In order: the machine's folders are reached through /mnt first (hiding capt's home, or /tmp if it holds
 * them, must not hide them); the tool cache and capt's code are bound into the machine's /run before the
 * folders that hold them are hidden, and capt's code goes back, read-only, to its own path. Sources of tmpfs
 * mounts have names of their own, so `mount -a` never takes one for the host's.
 */
function machineMounts(root: string): string {
  return (
    [
      [root, '/mnt', 'none', 'bind'],
      ['/mnt/run', '/run', 'none', 'bind'],
      [toolsDir(), toolsInMachine, 'none', 'bind,ro'],
      [codeRoot, '/run/capt/code', 'none', 'bind,ro'],
      ['capt-hidden', captHome(), 'tmpfs', 'size=1m,mode=700'],
      ['overlay', '/etc', 'overlay', 'lowerdir=/etc,upperdir=/mnt/etc,workdir=/mnt/.work/etc'],
      ...writable.filter((d) => d !== 'run').map((d) => [`/mnt/${d}`, `/${d}`, 'none', 'bind']),
      ['/run/capt/code', codeRoot, 'none', 'bind,ro'],
      ['machine-shm', '/dev/shm', 'tmpfs', 'size=64m'],
    ]
      .map(([source, target, type, options]) => `${fstabPath(source!)} ${fstabPath(target!)} ${type} ${options} 0 0`)
      .join('\n') + '\n'
  );
}

/**
 * Runs a command inside a machine. As the host's root: a private mount namespace where the host's filesystem
 * is read-only, /etc is an overlay whose changes land in the machine's root, /run, /var, /tmp, /home and /root
 * are the machine's own, capt's state is hidden, and capt's code and tools are read-only. Then,
 * as the machine's own unprivileged host id (setpriv drops every capability and supplementary group): a user
 * namespace where that id is root, a PID namespace (the machine sees only its own processes, under a /proc of
 * its own) and a mount namespace whose mounts it cannot undo. Its root has no capability in the host's
 * namespaces: host files it does not own are "nobody"'s to it, /proc/sys, /sys and cgroups are read-only, raw
 * devices closed, other processes' /proc entries out of reach.
 *
 * PID 1 of the machine runs the command, then stays while the machine has other processes (a control plane's
 * components), reaping orphans as an init does; a worker whose bootstrap started nothing ends with it.
 * SIGTERM to the sandbox's process group reaches PID 1, which kills every process of the machine; should
 * the sandbox's outer process die first, unshare --kill-child takes PID 1, and the machine, with it. The mounts are one `mount -a` over a table (machineMounts): a mount(8) per mount cost ~19 ms of
 * CPU per machine, the table ~7 ms.
 */
const outerScript = `set -e
R=$1; U=$2; shift 2
mount -a -T "$R/${fstabName}"
umount /mnt
mount -o remount,bind,ro /
exec setpriv --reuid="$U" --regid="$U" --clear-groups --inh-caps=-all -- unshare --user --map-root-user --pid --fork --kill-child --mount --mount-proc -- /bin/sh -c "$0" capt-machine-init "$@"`;

/**
 * The machine's PID 1: the command (in the background, so a SIGTERM is handled at once), then a wait while
 * anything else of the machine runs. SIGTERM powers the machine off: every process of it killed (`kill -1`
 * only as PID 1, so only ever inside the machine's PID namespace).
 */
const initScript = `trap '[ $$ = 1 ] && kill -KILL -1; exit 143' TERM
"$@" &
wait $!
c=$?
while :; do
  n=0
  for p in /proc/[0-9]*; do n=$((n + 1)); done
  [ "$n" -le 1 ] && exit "$c"
  sleep 5 & wait
done`;

/** The checkout capt runs from (dist/ and node_modules/), which machines run kubeadm from. */
const codeRoot = join(__dirname, '../../..');

/** Lays out a new machine's root; its folders belong to the machine's host id, so its root can write them and nothing else. */
export async function prepareMachineRoot(root: string, hostId: number): Promise<void> {
  const dirs = [
    'etc',
    '.work/etc',
    ...writable,
    'run/capt/bin',
    'run/capt/code',
    'run/capt/tools',
    'run/cluster-api',
    'var/lib/cloud/instance',
    'var/lib/kubelet',
    'var/log',
  ];
  // capt's code under a folder the machine replaces needs its mount point inside the machine's own copy.
  const hidden = writable.find((d) => codeRoot.startsWith(`/${d}/`));
  if (hidden) dirs.push(codeRoot.slice(1));
  for (const dir of dirs) await mkdir(join(root, dir), { recursive: true });
  for (const dir of [
    'etc',
    ...writable,
    'run/capt',
    'run/capt/bin',
    'run/cluster-api',
    'var/lib',
    'var/lib/cloud',
    'var/lib/cloud/instance',
    'var/lib/kubelet',
    'var/log',
  ]) {
    await chown(join(root, dir), hostId, hostId);
  }
}

/**
 * A machine's processes stand in for another host's: at a lower CPU priority, a cluster of them booting should not
 * starve the management plane (Temporal, capt's worker) that shares this host with them (though under autogroup
 * scheduling each session shares as an equal: docs/local-provider).
 */
const machineNiceness = 10;

/** `command` run at a machine's CPU priority: for what stands in for other hosts (machines, their kubelets). */
export const atMachinePriority = (command: string, args: string[]) => ({
  command: 'nice',
  args: ['-n', String(machineNiceness), command, ...args],
});

/** The only environment a machine starts with: nothing of the worker's (its keys, its addresses) reaches it. */
export const machineEnvironment: Record<string, string> = {
  PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
  HOME: '/root',
  LANG: 'C.UTF-8',
};

/** The command that runs `argv` inside the machine at `root` as `hostId` (its mount table written first). */
export async function sandboxed(
  root: string,
  hostId: number,
  argv: string[],
): Promise<{ command: string; args: string[]; env: Record<string, string> }> {
  await writeFile(join(root, fstabName), machineMounts(root));
  return {
    ...atMachinePriority('unshare', [
      '--mount',
      '--propagation',
      'private',
      '--',
      '/bin/sh',
      '-c',
      outerScript,
      initScript,
      root,
      String(hostId),
      ...argv,
    ]),
    env: machineEnvironment,
  };
}
