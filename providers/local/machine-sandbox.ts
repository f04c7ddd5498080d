import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { captHome } from '../../src/config/capt-home';

/** Host folders a machine may write; each is its own folder inside the machine's root. */
const writable = ['run', 'var', 'tmp', 'home'];

/** The machine's mount table, in its root (which the machine itself never sees). */
const fstabName = '.sandbox.fstab';

/** A path as fstab spells it: blanks and backslashes in octal. */
const fstabPath = (p: string) => p.replace(/[\\ \t\n]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`);

/**
 * In order: the machine's folders are reached through /mnt first (hiding capt's home, or /tmp if it lives
 * there, must not hide them); capt's code stays reachable at its own path even under a folder the machine
 * replaces. Sources of tmpfs mounts have names of their own, so `mount -a` never takes one for the host's.
 */
function machineMounts(root: string): string {
  const home = captHome();
  return [
    [root, '/mnt', 'none', 'bind'],
    ['capt-hidden', home, 'tmpfs', 'size=1m,mode=700'],
    ['overlay', '/etc', 'overlay', 'lowerdir=/etc,upperdir=/mnt/etc,workdir=/mnt/.work/etc'],
    ['/mnt/run', '/run', 'none', 'bind'],
    ['/mnt/var', '/var', 'none', 'bind'],
    ['/mnt/home', '/home', 'none', 'bind'],
    [codeRoot, '/run/capt/code', 'none', 'bind'],
    ['/mnt/tmp', '/tmp', 'none', 'bind'],
    ['/run/capt/code', codeRoot, 'none', 'bind,ro'],
    ['machine-shm', '/dev/shm', 'tmpfs', 'size=64m'],
  ].map(([source, target, type, options]) => `${fstabPath(source!)} ${fstabPath(target!)} ${type} ${options} 0 0`).join('\n') + '\n';
}

/**
 * Runs a command inside a machine: a private mount namespace where the host's filesystem is read-only,
 * /etc is an overlay whose changes land in the machine's root, /run, /var, /tmp and /home are the
 * machine's own, capt's state (other machines, the cluster's kubeconfig) is hidden, and capt's code is read-only at its path. Processes the command starts
 * stay in that namespace, as a VM's processes stay in the VM. The mounts are one `mount -a` over a table
 * (machineMounts): a mount(8) per mount cost ~19 ms of CPU per machine, the table ~7 ms.
 */
const script = `set -e
R=$1; shift
mount -a -T "$R/${fstabName}"
umount /mnt
mount -o remount,bind,ro /
exec "$@"`;

/** The checkout capt runs from (dist/ and node_modules/), which machines run kubeadm from. */
const codeRoot = join(__dirname, '../../..');

export async function prepareMachineRoot(root: string): Promise<void> {
  for (const dir of ['etc', '.work/etc', ...writable, 'run/capt/bin', 'run/capt/code', 'run/cluster-api', 'var/lib/cloud/instance', 'var/lib/kubelet', 'var/log']) {
    await mkdir(join(root, dir), { recursive: true });
  }
}

/**
 * A machine's processes stand in for another host's: at a lower CPU priority, a cluster of them booting
 * never starves the management plane (Temporal, capt's worker) that shares this host with them.
 */
const machineNiceness = 10;

/** The command that runs `argv` inside the machine at `root` (its mount table written first). */
export async function sandboxed(root: string, argv: string[]): Promise<{ command: string; args: string[] }> {
  // capt's code under a folder the machine replaces needs its mount point inside the machine's own copy.
  const hidden = writable.find((d) => codeRoot.startsWith(`/${d}/`));
  if (hidden) await mkdir(join(root, codeRoot), { recursive: true });
  await writeFile(join(root, fstabName), machineMounts(root));
  return { command: 'nice', args: ['-n', String(machineNiceness), 'unshare', '--mount', '--propagation', 'private', '--', '/bin/sh', '-c', script, 'capt-machine', root, ...argv] };
}
