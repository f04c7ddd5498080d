import { capiCounters } from './capi-counters';
import type { CapiManagement } from './capi-management';
import { objectPath } from '../../src/management-api/api-client';
import { waitUntil, type ClusterDriver, type Workload } from './scenario';

type Json = Record<string, unknown>;

const ns = 'default';
const cluster = 'bench';
const kcp = `${cluster}-control-plane`;
const md = `${cluster}-md-0`;
const groups = {
  core: 'cluster.x-k8s.io',
  bootstrap: 'bootstrap.cluster.x-k8s.io',
  controlPlane: 'controlplane.cluster.x-k8s.io',
  infrastructure: 'infrastructure.cluster.x-k8s.io',
} as const;
const v = (group: string) => `${group}/v1beta2`;
const paths = {
  cluster: objectPath({ apiVersion: v(groups.core), kind: 'Cluster', namespace: ns, name: cluster }),
  kcp: objectPath({ apiVersion: v(groups.controlPlane), kind: 'KubeadmControlPlane', namespace: ns, name: kcp }),
  md: objectPath({ apiVersion: v(groups.core), kind: 'MachineDeployment', namespace: ns, name: md }),
  machines: objectPath({ apiVersion: v(groups.core), kind: 'Machine', namespace: ns }),
  machineSets: objectPath({ apiVersion: v(groups.core), kind: 'MachineSet', namespace: ns }),
};

/** The in-memory backend's fake VM, Node, apiserver and etcd, each provisioned after `seconds` (e2e: 10 s for the VM, 2 s for the rest, jitter 0.2). */
function inMemoryBackend(delays: Workload['delays']) {
  const provisioning = (seconds: number) => ({
    provisioning:
      delays === 'zero' ? { startupDuration: '0s' } : { startupDuration: `${seconds}s`, startupJitter: '0.2' },
  });
  return {
    inMemory: { vm: provisioning(10), node: provisioning(2), apiServer: provisioning(2), etcd: provisioning(2) },
  };
}

const meta = (name: string) => ({ name, namespace: ns });

/** The node labels capt's quickstart gives each pool (a kubeadm config may not be empty). */
const nodeLabels = (pool: string) => ({
  nodeRegistration: { kubeletExtraArgs: [{ name: 'node-labels', value: `capt.example/pool=${pool}` }] },
});

/** The same cluster as capt's examples/quickstart.yaml, on Cluster API's in-memory (Dev*) infrastructure. */
function clusterObjects(w: Workload): Json[] {
  const ref = (group: string, kind: string, name: string) => ({ apiGroup: group, kind, name });
  const machineTemplate = (name: string) => ({
    apiVersion: v(groups.infrastructure),
    kind: 'DevMachineTemplate',
    metadata: meta(name),
    spec: { template: { spec: { backend: inMemoryBackend(w.delays) } } },
  });
  return [
    {
      // The in-memory backend writes an annotation into the DevCluster's map without making one (v1.14.2
      // panics on a nil map); ClusterClass-made DevClusters always carry some, so this one is given one.
      apiVersion: v(groups.infrastructure),
      kind: 'DevCluster',
      metadata: { ...meta(cluster), annotations: { 'capt.example/bench': 'side-by-side' } },
      spec: { backend: { inMemory: {} } },
    },
    machineTemplate(kcp),
    machineTemplate(md),
    {
      apiVersion: v(groups.controlPlane),
      kind: 'KubeadmControlPlane',
      metadata: meta(kcp),
      spec: {
        replicas: 1,
        version: w.fromVersion,
        machineTemplate: { spec: { infrastructureRef: ref(groups.infrastructure, 'DevMachineTemplate', kcp) } },
        kubeadmConfigSpec: {
          initConfiguration: nodeLabels('control-plane'),
          joinConfiguration: nodeLabels('control-plane'),
        },
      },
    },
    {
      apiVersion: v(groups.bootstrap),
      kind: 'KubeadmConfigTemplate',
      metadata: meta(md),
      spec: { template: { spec: { joinConfiguration: nodeLabels('md-0') } } },
    },
    {
      apiVersion: v(groups.core),
      kind: 'MachineDeployment',
      metadata: meta(md),
      spec: {
        clusterName: cluster,
        replicas: w.workers,
        template: {
          spec: {
            clusterName: cluster,
            version: w.fromVersion,
            bootstrap: { configRef: ref(groups.bootstrap, 'KubeadmConfigTemplate', md) },
            infrastructureRef: ref(groups.infrastructure, 'DevMachineTemplate', md),
          },
        },
        rollout: { strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '10%', maxUnavailable: 0 } } },
      },
    },
    {
      apiVersion: v(groups.core),
      kind: 'Cluster',
      metadata: meta(cluster),
      spec: {
        clusterNetwork: {
          services: { cidrBlocks: ['10.96.0.0/12'] },
          pods: { cidrBlocks: ['10.128.0.0/12'] },
          serviceDomain: 'cluster.local',
        },
        controlPlaneRef: ref(groups.controlPlane, 'KubeadmControlPlane', kcp),
        infrastructureRef: ref(groups.infrastructure, 'DevCluster', cluster),
      },
    },
  ];
}

interface ReplicaStatus {
  replicas?: number;
  readyReplicas?: number;
  availableReplicas?: number;
  upToDateReplicas?: number;
  observedGeneration?: number;
  version?: string;
}

/** The owner's spec is carried out: every replica up to date, ready and available, and no machine beyond them. */
function settled(object: Json | undefined, version?: string): boolean {
  if (!object) return false;
  const spec = object.spec as { replicas: number };
  const status = (object.status ?? {}) as ReplicaStatus;
  const generation = (object.metadata as { generation: number }).generation;
  return (
    status.observedGeneration === generation &&
    status.replicas === spec.replicas &&
    status.upToDateReplicas === spec.replicas &&
    status.readyReplicas === spec.replicas &&
    status.availableReplicas === spec.replicas &&
    (!version || status.version === version)
  );
}

function describe(kind: string, object: Json | undefined): string {
  if (!object) return `${kind} not found`;
  const s = (object.status ?? {}) as ReplicaStatus;
  return `${kind}: ${(object.spec as { replicas: number }).replicas} desired, ${s.replicas ?? 0} machines, ${s.upToDateReplicas ?? 0} up to date, ${s.readyReplicas ?? 0} ready, ${s.availableReplicas ?? 0} available`;
}

/**
 * Drives one Cluster API cluster through the scenario. Progress is read from the KubeadmControlPlane's and
 * MachineDeployment's own status (one small object each per second), never by listing the machines,
 * except a one-item page to see whether any is left.
 */
export function capiDriver(m: CapiManagement, w: Workload, log: (line: string) => void): ClusterDriver {
  // Generous: the hand run replaced a worker every 13.7 s at maxSurge 1; the bound only catches a stuck step.
  const timeoutMs = (300 + w.workers * 20) * 1000;
  const get = (path: string) => m.api.get(path);
  const both = async () =>
    `${describe('KubeadmControlPlane', await get(paths.kcp))}; ${describe('MachineDeployment', await get(paths.md))}`;
  const waitFor = (what: string, check: () => Promise<boolean>, status: () => Promise<string> = both) =>
    waitUntil(what, check, status, log, timeoutMs);
  const kcpSettled = async (version?: string) => settled(await get(paths.kcp), version);
  const mdSettled = async () => settled(await get(paths.md));
  // Right after a template change the old machines still count as up to date until the machine
  // controller looks again: the rollout is over when the only MachineSet with machines runs `version`.
  const rolledOut = async (version: string) => {
    const sets = ((
      await get(`${paths.machineSets}?labelSelector=${encodeURIComponent(`cluster.x-k8s.io/deployment-name=${md}`)}`)
    )?.items ?? []) as Json[];
    const withMachines = sets.filter(
      (s) =>
        ((s.spec as { replicas?: number }).replicas ?? 0) > 0 ||
        ((s.status as ReplicaStatus | undefined)?.replicas ?? 0) > 0,
    );
    return (
      withMachines.length === 1 &&
      (withMachines[0]!.spec as { template: { spec: { version: string } } }).template.spec.version === version &&
      (await mdSettled())
    );
  };
  const machinesOf = async (label: string) => {
    const page = await get(`${paths.machines}?labelSelector=${encodeURIComponent(label)}&limit=1`);
    return ((page?.items as unknown[] | undefined) ?? []).length;
  };
  return {
    async create() {
      for (const object of clusterObjects(w)) await m.api.create(object);
      await waitFor('create', async () => (await kcpSettled()) && (await mdSettled()));
    },
    async scaleControlPlane(replicas) {
      await m.api.mergePatch(paths.kcp, { spec: { replicas } });
      await waitFor('control-plane scale', () => kcpSettled());
    },
    async upgradeControlPlane(version) {
      await m.api.mergePatch(paths.kcp, { spec: { version } });
      await waitFor('control-plane upgrade', () => kcpSettled(version));
    },
    async rolloutWorkers(version) {
      await m.api.mergePatch(paths.md, { spec: { template: { spec: { version } } } });
      await waitFor('worker rollout', () => rolledOut(version));
    },
    async scaleWorkersToZero() {
      await m.api.mergePatch(paths.md, { spec: { replicas: 0 } });
      await waitFor(
        'scale to 0',
        async () => (await mdSettled()) && (await machinesOf(`cluster.x-k8s.io/deployment-name=${md}`)) === 0,
      );
    },
    async deleteCluster() {
      await m.api.delete(paths.cluster);
      await waitFor(
        'cluster delete',
        async () => !(await get(paths.cluster)),
        async () =>
          `${(await machinesOf(`cluster.x-k8s.io/cluster-name=${cluster}`)) ? 'machines left' : 'no machine left'}; cluster still there`,
      );
    },
    parts: () => m.parts(),
    counters: capiCounters(m.api),
  };
}
