import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { isListening } from '../../src/util/listening';
import { localRoot } from './layout';

/**
 * Loopback addresses for local clusters and machines. Linux answers all of 127.0.0.0/8, so each machine
 * gets an address of its own and every component keeps its standard port, as on a real network. A claim
 * is a folder named after the address (mkdir is atomic) holding its owner, so a retried create finds
 * its address again instead of taking a second one. An index from owner to address finds it with one
 * read: scanning every claim cost ~0.1 s per create at 1000 machines.
 */
const claimsDir = () => join(localRoot(), 'addresses');
const indexPath = (owner: string) =>
  join(localRoot(), 'address-owners', createHash('sha256').update(owner).digest('hex'));
const ownerOf = (ip: string) => readFile(join(claimsDir(), ip, 'owner'), 'utf8').catch(() => '');
const toIP = (n: number) => `127.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
const fromIP = (ip: string) => {
  const [a, b, c, d] = ip.split('.').map(Number);
  if (a !== 127 || [b, c, d].some((x) => !Number.isInteger(x) || x! < 0 || x! > 255))
    throw new Error(`CAPT_LOCAL_ADDRESSES: ${ip} is not a 127.x.y.z address`);
  return (b! << 16) | (c! << 8) | d!;
};

/**
 * The block to claim from: 127.1.0.1 - 127.254.255.254 by default (127.0.0.x is the host's own), or
 * CAPT_LOCAL_ADDRESSES=FIRST-LAST, so capt homes that run side by side (parallel tests) never race for one.
 */
function addressRange(): { first: number; last: number } {
  const spec = process.env.CAPT_LOCAL_ADDRESSES;
  if (!spec) return { first: (1 << 16) | 1, last: (254 << 16) | 0xfffe };
  const [first, last] = spec.split('-').map((ip) => fromIP(ip.trim())) as [number, number];
  if (last === undefined || first < 1 << 16 || last < first)
    throw new Error(
      `CAPT_LOCAL_ADDRESSES=${spec}: write FIRST-LAST within 127.1.0.0/8, e.g. 127.100.0.1-127.199.255.254`,
    );
  return { first, last };
}

async function owned(owner: string): Promise<string | undefined> {
  const ip = await readFile(indexPath(owner), 'utf8').catch(() => undefined);
  // An index entry outlives its claim only if a release was interrupted; the claim's owner file decides.
  return ip && (await ownerOf(ip)) === owner ? ip : undefined;
}

const inUse = async (ip: string) =>
  (await Promise.all([6443, 2379, 2380].map((port) => isListening(ip, port, 500)))).some(Boolean);

export async function claimAddress(owner: string): Promise<string> {
  const existing = await owned(owner);
  if (existing) return existing;
  await mkdir(claimsDir(), { recursive: true });
  const taken = new Set(await readdir(claimsDir()));
  const { first, last } = addressRange();
  for (let n = first; n <= last; n++) {
    const ip = toIP(n);
    if ((n & 255) === 0 || (n & 255) === 255 || taken.has(ip)) continue;
    try {
      await mkdir(join(claimsDir(), ip));
    } catch {
      continue; // Another create claimed it between readdir and mkdir.
    }
    // Something outside this capt home (another capt home, leftovers of a killed run) may use it.
    if (await inUse(ip)) {
      await rm(join(claimsDir(), ip), { recursive: true, force: true });
      continue;
    }
    await writeFile(join(claimsDir(), ip, 'owner'), owner);
    await mkdir(dirname(indexPath(owner)), { recursive: true });
    await writeFile(indexPath(owner), ip);
    return ip;
  }
  throw new Error(`no free loopback address left in ${toIP(first)} - ${toIP(last)}`);
}

/** Releasing an address that is not claimed succeeds. */
export async function releaseAddress(owner: string): Promise<void> {
  // Claims made before the index existed are found by scanning, as they always were.
  const ip = (await owned(owner)) ?? (await scanForOwner(owner));
  if (ip) await rm(join(claimsDir(), ip), { recursive: true, force: true });
  await rm(indexPath(owner), { force: true });
}

async function scanForOwner(owner: string): Promise<string | undefined> {
  for (const ip of await readdir(claimsDir()).catch(() => [] as string[])) if ((await ownerOf(ip)) === owner) return ip;
  return undefined;
}
