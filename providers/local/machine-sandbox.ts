import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { captHome } from '../../src/config/capt-home';

/** Host folders a machine may write; each is its own folder inside the machine's root. */
const writable = ['run', 'var', 'tmp', 'home'];

/**
 * Runs a command inside a machine: a private mount namespace where the host's filesystem is read-only,
 * /etc is an overlay whose changes land in the machine's root, /run, /var, /tmp and /home are the
 * machine's own, capt's state (other machines, secrets) is hidden, and capt's code is read-only at its path. Processes the command starts
 * stay in that namespace, as a VM's processes stay in the VM.
 */
const script = `set -e
R=$1; H=$2; C=$3; shift 3
# Reach the machine's folders through /mnt first: hiding capt's home (or /tmp, if it lives there) must not hide them.
mount --bind "$R" /mnt
mount -t tmpfs -o size=1m,mode=700 tmpfs "$H"
mount -t overlay overlay -o "lowerdir=/etc,upperdir=/mnt/etc,workdir=/mnt/.work/etc" /etc
for d in run var home; do mount --bind "/mnt/$d" "/$d"; done
# capt's own code (kubeadm) must stay reachable at its path even when it lives under /tmp.
mount --bind "$C" /run/capt/code
mount --bind /mnt/tmp /tmp
# Every mount(8) is a process: test and bind,ro (bind then read-only remount) spare three.
[ -d "$C" ] || mkdir -p "$C"
mount -o bind,ro /run/capt/code "$C"
umount /mnt
mount -t tmpfs -o size=64m tmpfs /dev/shm
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

export function sandboxed(root: string, argv: string[]): { command: string; args: string[] } {
  return { command: 'nice', args: ['-n', String(machineNiceness), 'unshare', '--mount', '--propagation', 'private', '--', '/bin/sh', '-c', script, 'capt-machine', root, captHome(), codeRoot, ...argv] };
}
