import { execFile } from 'node:child_process';
import { mkdir, stat, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { promisify } from 'node:util';
import type { HostPathMount } from '../../../src/contract/kubeadm-config-spec';
import { configuredComponents } from '../../../src/contract/control-plane-flags';
import type { KubeadmDocuments } from './kubeadm-config';
import { KubeadmError } from './worker-join';

const run = promisify(execFile);

/** Every extraVolume of the ClusterConfiguration's components. */
const componentVolumes = (docs: KubeadmDocuments): HostPathMount[] =>
  configuredComponents.flatMap(([field]) => docs.cluster?.[field]?.extraVolumes ?? []);

/** What is at `path`: a file, a directory, or nothing. */
const kindAt = (path: string) =>
  stat(path).then(
    (s) => (s.isDirectory() ? ('directory' as const) : ('file' as const)),
    () => undefined,
  );

/** kubelet's hostPath type check: the OrCreate types make what is missing, the others require it. */
async function checkHostPath(v: HostPathMount): Promise<'directory' | 'file' | undefined> {
  const found = await kindAt(v.hostPath);
  if (v.pathType === 'DirectoryOrCreate' && !found) {
    await mkdir(v.hostPath, { recursive: true, mode: 0o755 });
    return 'directory';
  }
  if (v.pathType === 'FileOrCreate' && !found) {
    await mkdir(dirname(v.hostPath), { recursive: true });
    await writeFile(v.hostPath, '', { mode: 0o644 });
    return 'file';
  }
  const wanted = v.pathType === 'Directory' || v.pathType === 'DirectoryOrCreate' ? 'directory' : 'file';
  if (v.pathType && found !== wanted)
    throw new KubeadmError(
      `extraVolume ${v.name}: ${v.hostPath} is ${found ? `a ${found}` : 'missing'}, but its pathType ${v.pathType} needs a ${wanted}`,
    );
  return found;
}

/**
 * A control-plane component runs as a process of the machine, not in a pod, so its volumes are the machine's
 * own mounts: hostPath bound at mountPath, read-only when asked, seen by every process of the machine.
 */
export async function mountComponentVolumes(docs: KubeadmDocuments): Promise<void> {
  for (const v of componentVolumes(docs)) {
    const kind = await checkHostPath(v);
    if (v.mountPath === v.hostPath && !v.readOnly) continue;
    if (!kind)
      throw new KubeadmError(
        `extraVolume ${v.name}: ${v.hostPath} is missing, so it cannot be mounted at ${v.mountPath}`,
      );
    try {
      await mountAt(v, kind);
    } catch (err) {
      const { message, stderr } = err as Error & { stderr?: string };
      throw new KubeadmError(`extraVolume ${v.name}: ${v.hostPath} at ${v.mountPath}: ${(stderr || message).trim()}`);
    }
  }
}

async function mountAt(v: HostPathMount, kind: 'directory' | 'file'): Promise<void> {
  // A bind needs a target of the source's kind; outside the machine's writable folders making one fails (EROFS).
  if (kind === 'directory') await mkdir(v.mountPath, { recursive: true });
  else if (!(await kindAt(v.mountPath))) {
    await mkdir(dirname(v.mountPath), { recursive: true });
    await writeFile(v.mountPath, '');
  }
  await run('mount', ['--bind', v.hostPath, v.mountPath]);
  if (v.readOnly) await run('mount', ['-o', 'remount,bind,ro', v.mountPath]);
}
