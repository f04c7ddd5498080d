import { spawn } from 'node:child_process';
import { rendererCommand, rendererLimits } from '../api/topology/render-topology';
import type { Json } from './json-tree';

/**
 * The kinds capt's conversion webhook hands to Cluster API's own conversion functions (the topology renderer's
 * `convert` request runs its webhooks' converters): those a capt cluster is not made of, by group. capt converts
 * the kinds it runs itself (convert.ts).
 */
export const clusterApiConvertedKinds: Record<string, readonly string[]> = {
  'cluster.x-k8s.io': ['ClusterClass', 'MachinePool', 'MachineDrainRule'],
  'addons.cluster.x-k8s.io': ['ClusterResourceSet', 'ClusterResourceSetBinding'],
  'runtime.cluster.x-k8s.io': ['ExtensionConfig'],
  'ipam.cluster.x-k8s.io': ['IPAddress', 'IPAddressClaim'],
};

export const convertedByClusterApi = (group: string, kind: string) =>
  clusterApiConvertedKinds[group]?.includes(kind) ?? false;

/** An object Cluster API's converter refused, or could not be asked: the ConversionReview fails with this message. */
export class ClusterApiConversionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ClusterApiConversionError';
  }
}

/** The renderer reads at most 4 MiB a request: a review's objects go in batches under it. */
const batchBytes = 3 << 20;

/** The objects in `desiredAPIVersion`, converted by Cluster API's converters, in order. */
export async function convertWithClusterApi(objects: Json[], desiredAPIVersion: string): Promise<Json[]> {
  const batches: Json[][] = [[]];
  let bytes = 0;
  for (const o of objects) {
    const size = Buffer.byteLength(JSON.stringify(o));
    if (size > batchBytes)
      throw new ClusterApiConversionError(
        `an object of ${size} bytes is over the ${batchBytes >> 20} MiB converted at once`,
      );
    if (bytes + size > batchBytes) {
      batches.push([]);
      bytes = 0;
    }
    batches.at(-1)!.push(o);
    bytes += size;
  }
  const converted: Json[] = [];
  for (const batch of batches) converted.push(...(await convertBatch(batch, desiredAPIVersion)));
  return converted;
}

async function convertBatch(objects: Json[], desiredAPIVersion: string): Promise<Json[]> {
  // The renderer's limits bound a review too: the apiserver waits 30 s at most.
  const child = spawn(...rendererCommand(), {
    stdio: ['pipe', 'pipe', 'pipe'],
    timeout: rendererLimits.timeoutMs,
    killSignal: 'SIGKILL',
  });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on('data', (c: Buffer) => out.push(c));
  child.stderr.on('data', (c: Buffer) => err.push(c));
  child.stdin.end(JSON.stringify({ convert: { desiredAPIVersion, objects } }));
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (c, s) => resolve([c, s]));
  });
  const stdout = Buffer.concat(out).toString('utf8');
  if (signal)
    throw new ClusterApiConversionError(
      `Cluster API's converter was stopped (${signal}) converting ${objects.length} objects`,
    );
  if (code === 0) return (JSON.parse(stdout) as { objects: Json[] }).objects;
  if (code === 1) {
    const [first] = (JSON.parse(stdout) as { errors: { message: string }[] }).errors;
    throw new ClusterApiConversionError(first?.message ?? 'refused by Cluster API');
  }
  throw new Error(
    `Cluster API's converter failed (exit ${code}): ${Buffer.concat(err).toString('utf8').trim().split('\n')[0]!.slice(0, 500)}`,
  );
}
