import { isDeepStrictEqual } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { renderTopology, type KubeObject, type RenderedTopology } from '../../src/api/topology/render-topology';
import { loadManifests } from '../../src/api/load-manifests';
import type { ClusterModel } from '../../src/api/model';
import { substituteVariables } from '../../src/api/variables';
import { objectPath, type ManagementApi } from '../../src/management-api/api-client';
import { availableKubernetesVersions } from '../../src/tools';
import { capiQuickStart } from '../../test/fixtures/capi-quick-start';
import { resultHeader, runBenchmark, writeResult } from '../bench-result';
import { startCapiManagement } from './capi-management';
import { inNetworkNamespace, rerunInNetworkNamespace } from './network-namespace';
import { until } from '../../test/fixtures/until';

/**
 * Cluster API's topology controller and capt render the same ClusterClass and topology: Cluster API's quick-start
 * (test/fixtures/capi-quick-start.ts, on Cluster API's in-memory backend) applied to Cluster API's own managers
 * with ClusterTopology on, and given to capt's renderer. The objects each made are compared field by field, names
 * aside, and every difference must be one listed in `explained` with its reason.
 *   node dist/bench/capi/topology-differential.bench.js
 * writes bench/results/topology-differential.json; exits 1 on a difference not explained. Needs Cluster API's
 * managers (bench/capi/build.sh); runs in a network namespace of its own, as the side-by-side bench does.
 */

type Json = Record<string, unknown>;
const namespace = 'default';
const cluster = 'diff';
const log = (line: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`);

/**
 * Differences that are expected, by a pattern over `role: path`, with why, and what capt's model of the same
 * Cluster must hold for the reason to be true (the difference is explained only when it does).
 */
const explained: { pattern: RegExp; why: string; holds: (model: ClusterModel) => boolean }[] = [
  {
    pattern: /^controlPlane: spec\.rollout$/,
    why: "Cluster API's KubeadmControlPlane defaulting webhook sets rollout.strategy (RollingUpdate, maxSurge 1) when the topology controller creates the object; capt's renderer runs only the Cluster and ClusterClass webhooks, and capt's loader then gives the made control plane the same default",
    holds: (m) => m.controlPlane.maxSurge === 1,
  },
  {
    pattern: /^machineDeployment md-0: spec\.rollout$/,
    why: "Cluster API's MachineDeployment defaulting webhook sets rollout.strategy (RollingUpdate, maxSurge 1, maxUnavailable 0); capt's loader gives the made MachineDeployment the same default",
    holds: (m) =>
      isDeepStrictEqual(
        { ...m.machineDeployments[0]!.strategy, deletionOrder: undefined },
        { type: 'RollingUpdate', maxSurge: 1, maxUnavailable: 0, deletionOrder: undefined },
      ),
  },
];

/** The objects of one side by role: what the topology controller made for the Cluster. */
type Rendered = Record<string, KubeObject>;

const group = (apiVersion: string) => apiVersion.split('/')[0]!;
const path = (apiVersion: string, kind: string, name?: string) =>
  objectPath({ apiVersion, kind, namespace, ...(name ? { name } : {}) });

/** What capt's renderer made, by role. */
function captObjects(r: RenderedTopology): Rendered {
  const out: Rendered = {
    infrastructureCluster: r.infrastructureCluster,
    controlPlane: r.controlPlane.object,
  };
  if (r.controlPlane.infrastructureMachineTemplate)
    out.controlPlaneInfrastructureTemplate = r.controlPlane.infrastructureMachineTemplate;
  if (r.controlPlane.machineHealthCheck) out.controlPlaneHealthCheck = r.controlPlane.machineHealthCheck;
  for (const md of r.machineDeployments) {
    out[`machineDeployment ${md.topologyName}`] = md.object;
    out[`bootstrapTemplate ${md.topologyName}`] = md.bootstrapTemplate;
    out[`infrastructureTemplate ${md.topologyName}`] = md.infrastructureMachineTemplate;
    if (md.machineHealthCheck) out[`healthCheck ${md.topologyName}`] = md.machineHealthCheck;
  }
  return out;
}

/** What Cluster API's topology controller made, by role, read from its management API once every part exists. */
async function capiObjects(api: ManagementApi, topologies: string[]): Promise<Rendered> {
  const get = async (apiVersion: string, kind: string, name: string) => {
    const o = await api.get(path(apiVersion, kind, name));
    if (!o) throw new Error(`${kind} ${name} is missing`);
    return o as unknown as KubeObject;
  };
  const list = async (apiVersion: string, kind: string) =>
    ((await api.get(`${path(apiVersion, kind)}?labelSelector=cluster.x-k8s.io/cluster-name%3D${cluster}`))?.items ??
      []) as KubeObject[];
  const c = await get('cluster.x-k8s.io/v1beta2', 'Cluster', cluster);
  const ref = (o: KubeObject, at: string[]) =>
    at.reduce<Json>((v, k) => v[k] as Json, o as unknown as Json) as { apiGroup: string; kind: string; name: string };
  // Every kind involved is served in v1beta2, the version the topology controller writes references for.
  const byRef = (r: { apiGroup: string; kind: string; name: string }) => get(`${r.apiGroup}/v1beta2`, r.kind, r.name);
  const cp = await byRef(ref(c, ['spec', 'controlPlaneRef']));
  const out: Rendered = {
    infrastructureCluster: await byRef(ref(c, ['spec', 'infrastructureRef'])),
    controlPlane: cp,
    controlPlaneInfrastructureTemplate: await byRef(ref(cp, ['spec', 'machineTemplate', 'spec', 'infrastructureRef'])),
  };
  const checks = await list('cluster.x-k8s.io/v1beta2', 'MachineHealthCheck');
  const check = (name: string) => checks.find((h) => h.metadata.name === name);
  if (check(cp.metadata.name)) out.controlPlaneHealthCheck = check(cp.metadata.name)!;
  const mds = await list('cluster.x-k8s.io/v1beta2', 'MachineDeployment');
  for (const topology of topologies) {
    const md = mds.find((m) => m.metadata.labels?.['topology.cluster.x-k8s.io/deployment-name'] === topology);
    if (!md) throw new Error(`no MachineDeployment of topology ${topology}`);
    out[`machineDeployment ${topology}`] = md;
    out[`bootstrapTemplate ${topology}`] = await byRef(ref(md, ['spec', 'template', 'spec', 'bootstrap', 'configRef']));
    out[`infrastructureTemplate ${topology}`] = await byRef(ref(md, ['spec', 'template', 'spec', 'infrastructureRef']));
    if (check(md.metadata.name)) out[`healthCheck ${topology}`] = check(md.metadata.name)!;
  }
  return out;
}

/** The object with each side's names of the cluster's objects replaced by their roles, and server-made fields dropped. */
function normalized(o: KubeObject, names: Map<string, string>): Json {
  const rename = (v: unknown): unknown => {
    if (typeof v === 'string') return names.get(v) ?? v;
    if (Array.isArray(v)) return v.map(rename);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, rename(x)]));
    return v;
  };
  const { labels, annotations } = o.metadata;
  return rename({ kind: o.kind, group: group(o.apiVersion), labels, annotations, spec: o.spec }) as Json;
}

/** Every path where the two differ, with each side's value. */
function differences(a: unknown, b: unknown, at = ''): { path: string; capi: unknown; capt: unknown }[] {
  if (isDeepStrictEqual(a, b)) return [];
  const objects = a && b && typeof a === 'object' && typeof b === 'object' && !Array.isArray(a) && !Array.isArray(b);
  if (!objects) return [{ path: at || '.', capi: a, capt: b }];
  const keys = [...new Set([...Object.keys(a as Json), ...Object.keys(b as Json)])].sort();
  return keys.flatMap((k) => differences((a as Json)[k], (b as Json)[k], at ? `${at}.${k}` : k));
}

const roleNames = (r: Rendered) => new Map(Object.entries(r).map(([role, o]) => [o.metadata.name, `<${role}>`]));

async function main(): Promise<void> {
  if (!inNetworkNamespace()) {
    process.exitCode = await rerunInNetworkNamespace();
    return;
  }
  const version = availableKubernetesVersions().at(-1)!;
  const vars = {
    CLUSTER_NAME: cluster,
    NAMESPACE: namespace,
    KUBERNETES_VERSION: version,
    CONTROL_PLANE_MACHINE_COUNT: '3',
    WORKER_MACHINE_COUNT: '2',
  };
  const objects = parseAllDocuments(substituteVariables(capiQuickStart('in-memory'), vars).text)
    .map((d) => d.toJS() as KubeObject | null)
    .filter((o) => o !== null)
    .map((o) => ({ ...o, metadata: { ...o.metadata, namespace } }));
  const topologies = ['md-0'];

  // capt's model of the same Cluster on its own provider, which the explanations are checked against.
  const [model] = loadManifests([{ file: 'capi-quick-start', text: capiQuickStart('local') }], vars);
  const rendered = renderTopology(objects);
  if ('errors' in rendered) throw new Error(`capt's renderer refused: ${JSON.stringify(rendered.errors)}`);
  const capt = captObjects(rendered);

  const m = await startCapiManagement('default', false, log, { CLUSTER_TOPOLOGY: 'true' });
  let capi: Rendered;
  try {
    // Templates and the class first, as clusterctl applies a flavor: the Cluster's webhook reads the class.
    for (const o of [...objects.filter((x) => x.kind !== 'Cluster'), ...objects.filter((x) => x.kind === 'Cluster')])
      await m.api.create(o as unknown as Json);
    log(`applied ${objects.length} objects; waiting for the topology controller's MachineDeployments`);
    capi = await until(
      "the topology controller's objects",
      () => capiObjects(m.api, topologies).catch(() => undefined),
      { timeoutMs: 300_000 },
    );
  } finally {
    await m.stop();
  }

  const capiNames = roleNames(capi);
  const captNames = roleNames(capt);
  const roles = [...new Set([...Object.keys(capi), ...Object.keys(capt)])].sort();
  const compared = roles.map((role) => {
    const diffs = !capi[role]
      ? [{ path: '.', capi: undefined, capt: 'made' }]
      : !capt[role]
        ? [{ path: '.', capi: 'made', capt: undefined }]
        : differences(normalized(capi[role], capiNames), normalized(capt[role], captNames));
    return {
      role,
      differences: diffs.map((d) => {
        const why = explained.find((e) => e.pattern.test(`${role}: ${d.path}`) && e.holds(model!))?.why;
        return { ...d, ...(why ? { explained: why } : {}) };
      }),
    };
  });
  const unexplained = compared.flatMap((c) =>
    c.differences.filter((d) => !d.explained).map((d) => `${c.role}: ${d.path}`),
  );
  await writeResult('topology-differential', {
    ...resultHeader(),
    clusterApi: m.modules.version,
    kubernetes: version,
    input:
      "Cluster API's quick-start ClusterClass and development Cluster (test/fixtures/capi-quick-start.ts, in-memory)",
    identical: compared.filter((c) => c.differences.length === 0).map((c) => c.role),
    compared: compared.filter((c) => c.differences.length > 0),
    unexplained,
  });
  if (unexplained.length) {
    log(`${unexplained.length} differences not explained:\n  ${unexplained.join('\n  ')}`);
    process.exitCode = 1;
  } else
    log(
      `every difference explained; identical: ${compared.filter((c) => !c.differences.length).length} of ${roles.length} objects`,
    );
}

runBenchmark(main);
