import { spawnSync } from 'node:child_process';
import { topologyRenderPath } from '../../tools';

/** A Kubernetes object as the renderer reads and writes it. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: Record<string, unknown>;
  [key: string]: unknown;
}

/** What Cluster API's topology code made of a Cluster with spec.topology (bench/capi/module/topology-render). */
export interface RenderedTopology {
  cluster: KubeObject;
  infrastructureCluster: KubeObject;
  controlPlane: {
    object: KubeObject;
    infrastructureMachineTemplate: KubeObject | null;
    machineHealthCheck: KubeObject | null;
  };
  machineDeployments: {
    topologyName: string;
    object: KubeObject;
    bootstrapTemplate: KubeObject;
    infrastructureMachineTemplate: KubeObject;
    machineHealthCheck: KubeObject | null;
  }[];
}

/** A refusal by Cluster API's webhooks or topology code, with the object and field it names. */
export interface RenderProblem {
  kind: string;
  name: string;
  field: string;
  message: string;
  /** How to fix it, where capt knows better than the generic advice. */
  hint?: string;
}

/** The renderer reads at most this much; a cluster's class and templates are a few kilobytes. */
const maxInputBytes = 4 << 20;
/**
 * A render takes about 0.2 s and 60 MiB. A patch template can loop (sprig's `until`), so the renderer runs
 * under limits, whatever it is asked: 2 GiB of address space (Go reserves much of it: the heap stops near
 * 400 MiB), 10 s of CPU and 15 s in all.
 */
export const rendererLimits = { addressSpaceBytes: 2 * 1024 ** 3, cpuSeconds: 10, timeoutMs: 15_000 };

/** The renderer's command line, under those limits: prlimit, then the renderer setup built. */
export const rendererCommand = (): [string, string[]] => [
  'prlimit',
  [`--as=${rendererLimits.addressSpaceBytes}`, `--cpu=${rendererLimits.cpuSeconds}`, '--', topologyRenderPath()],
];

/**
 * Renders a Cluster with spec.topology, its ClusterClass and the class's templates with Cluster API's own
 * topology code: defaulting and validation of the class and the Cluster's variables, then the desired objects
 * with the class's patches applied. Runs synchronously, as the rest of manifest loading does.
 */
export function renderTopology(objects: KubeObject[]): RenderedTopology | { errors: RenderProblem[] } {
  const clusterClass = objects.find((o) => o.kind === 'ClusterClass');
  const refuse = (message: string, hint?: string) => ({
    errors: [{ kind: 'ClusterClass', name: clusterClass?.metadata.name ?? '', field: '', message, hint }],
  });
  const input = JSON.stringify({ objects });
  if (Buffer.byteLength(input) > maxInputBytes)
    return refuse(
      `the Cluster, its class and templates come to more than ${maxInputBytes >> 20} MiB`,
      'a class and its templates are a few kilobytes: move large files out of the templates',
    );
  const run = spawnSync(...rendererCommand(), {
    input,
    encoding: 'utf8',
    timeout: rendererLimits.timeoutMs,
    maxBuffer: 16 << 20,
    killSignal: 'SIGKILL',
  });
  const overLimit = (what: string) =>
    refuse(
      `Cluster API's topology code ${what} rendering this class for its Cluster`,
      'look for a patch template that loops (range, until) or builds large text: keep what patches render small',
    );
  if (run.signal || (run.error as NodeJS.ErrnoException | undefined)?.code === 'ETIMEDOUT')
    return overLimit(`took longer than ${rendererLimits.cpuSeconds} s`);
  if (run.error) throw new Error(`Cluster API's topology renderer could not run: ${run.error.message}`);
  if (run.status === 0) return JSON.parse(run.stdout) as RenderedTopology;
  if (run.status === 1) return JSON.parse(run.stdout) as { errors: RenderProblem[] };
  if (/fatal error: out of memory/.test(run.stderr)) return overLimit('ran out of the memory capt allows it');
  // Exit 2 is input this loader should never send: a bug here, not in the user's manifests.
  throw new Error(
    `Cluster API's topology renderer failed (exit ${run.status}): ${run.stderr.trim().split('\n')[0]!.slice(0, 500)}`,
  );
}
