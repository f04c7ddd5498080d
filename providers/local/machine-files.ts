import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { open } from 'node:fs/promises';

/**
 * Reads a file a machine may have written, from the host: never through a symlink at its last component,
 * only a regular file the machine's own host id owns (so a symlinked folder cannot lead to a host file), and
 * at most `maxBytes` (the last ones). Anything else reads as absent.
 */
export async function readMachineFile(
  path: string,
  hostId: number | undefined,
  maxBytes: number,
): Promise<string | undefined> {
  let file;
  try {
    file = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const stat = await file.stat();
    if (!stat.isFile() || (hostId !== undefined && stat.uid !== hostId)) return undefined;
    const length = Math.min(stat.size, maxBytes);
    const buffer = Buffer.alloc(length);
    const { bytesRead } = await file.read(buffer, 0, length, stat.size - length);
    return buffer.subarray(0, bytesRead).toString('utf8');
  } finally {
    await file.close();
  }
}

/** A machine's JSON file, parsed, or undefined when absent, not the machine's, too big or not JSON. */
export async function readMachineJson<T>(
  path: string,
  hostId: number | undefined,
  maxBytes = 64 << 10,
): Promise<T | undefined> {
  const text = await readMachineFile(path, hostId, maxBytes + 1);
  if (text === undefined || text.length > maxBytes) return undefined;
  try {
    return JSON.parse(text) as T;
  } catch {
    return undefined;
  }
}

/** readMachineJson for synchronous callers (the cluster agent's scans): the same checks, the whole file or nothing. */
export function readMachineJsonSync<T>(path: string, hostId: number | undefined, maxBytes = 64 << 10): T | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile() || (hostId !== undefined && stat.uid !== hostId) || stat.size > maxBytes) return undefined;
    const buffer = Buffer.alloc(stat.size);
    const read = readSync(fd, buffer, 0, stat.size, 0);
    return JSON.parse(buffer.subarray(0, read).toString('utf8')) as T;
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}
