import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { parseAllDocuments, stringify } from 'yaml';
import { substituteVariables } from '../../src/api/variables';
import { availableKubernetesVersions, clusterctlPath } from '../../src/tools';
import { machinesDir } from '../../providers/local/layout';
import { capiQuickStart } from '../fixtures/capi-quick-start';
import { runProgram } from '../fixtures/capt-cli';
import { startDevStack, type DevStackUnderTest } from '../fixtures/dev-stack';
import { until } from '../fixtures/until';

/**
 * Cluster API's own quick-start (its ClusterClass and development Cluster, kinds swapped to the local provider's)
 * applied with kubectl to `capt dev start`'s management API: the bridge makes the objects Cluster API's topology
 * controller makes, a version change made with kubectl upgrades the control plane and then the workers, a refused
 * one is refused at once, and the Cluster's deletion takes what it made, and only that.
 */

const [older, newer] = availableKubernetesVersions().slice(-2) as [string, string];
const name = 'qst';
const topologyOwned = 'topology.cluster.x-k8s.io/owned';
let stack: DevStackUnderTest;

type ApiObject = {
  kind: string;
  metadata: {
    name: string;
    uid?: string;
    labels?: Record<string, string>;
    ownerReferences?: { kind: string; name: string; controller?: boolean }[];
  };
  spec: Record<string, unknown> & {
    version?: string;
    controlPlaneRef?: { kind: string; name: string };
    taints?: object[];
  };
  status?: { conditions?: { type: string; status: string; reason: string; message?: string }[] };
};
type MachineDeploymentObject = ApiObject & {
  spec: { template: { spec: { version: string; infrastructureRef: { name: string } } } };
};
type MachineObject = ApiObject & {
  metadata: { labels: Record<string, string> };
  spec: { version: string };
  // The bridge makes a Machine, then writes its status: a list between the two shows none.
  status?: { phase?: string };
};

before(async () => {
  stack = await startDevStack();
});

after(async () => {
  await stack?.kubectl(undefined, 'delete', 'cluster', name, '--ignore-not-found', '--timeout=5m');
  await stack?.remove();
});

const getJson = async <T>(...args: string[]): Promise<T> => {
  const got = await stack.kubectl(undefined, 'get', ...args, '-o', 'json');
  assert.equal(got.code, 0, got.stderr);
  return JSON.parse(got.stdout) as T;
};
/** The topology's version changed with kubectl, as an operator changes it. */
const patchVersion = (version: string) =>
  stack.kubectl(
    undefined,
    'patch',
    'cluster',
    name,
    '--type',
    'merge',
    '-p',
    JSON.stringify({ spec: { topology: { version } } }),
  );
const condition = (o: ApiObject, type: string) => o.status?.conditions?.find((c) => c.type === type);

test("Cluster API's quick-start ClusterClass through kubectl: the topology's objects made as Cluster API makes them, an upgrade control plane first, a downgrade refused, deletion", async () => {
  // With a taint on the workers' topology: the renderer carries it to the MachineDeployment, the Machines show it.
  const taint = { key: 'capt.example/dedicated', value: 'gold', effect: 'NoSchedule', propagation: 'Always' };
  const manifest = parseAllDocuments(
    substituteVariables(capiQuickStart(), {
      CLUSTER_NAME: name,
      NAMESPACE: 'default',
      KUBERNETES_VERSION: older,
      CONTROL_PLANE_MACHINE_COUNT: '1',
      WORKER_MACHINE_COUNT: '1',
    }).text,
  )
    .map((d) => d.toJS() as { kind: string; spec: { topology?: { workers: { machineDeployments: object[] } } } } | null)
    .filter((d) => d !== null)
    .map((d) => {
      if (d.kind === 'Cluster')
        d.spec.topology!.workers.machineDeployments[0] = {
          ...d.spec.topology!.workers.machineDeployments[0],
          taints: [taint],
        };
      return stringify(d);
    })
    .join('---\n');
  await stack.applyAndWait(manifest, name);

  // What the topology controller makes: controlled by the Cluster, labelled as made of its topology, and named by
  // the Cluster's references. The class and its templates stay the class's.
  const made = await getJson<{ items: ApiObject[] }>(
    'kubeadmcontrolplanes,machinedeployments,machinehealthchecks,localclusters,localmachinetemplates,kubeadmconfigtemplates',
    '-l',
    `${topologyOwned},cluster.x-k8s.io/cluster-name=${name}`,
  );
  assert.deepEqual([...new Set(made.items.map((o) => o.kind))].sort(), [
    'KubeadmConfigTemplate',
    'KubeadmControlPlane',
    'LocalCluster',
    'LocalMachineTemplate',
    'MachineDeployment',
    'MachineHealthCheck',
  ]);
  for (const o of made.items)
    assert.deepEqual(
      o.metadata.ownerReferences?.map((r) => [r.kind, r.name, r.controller]),
      [['Cluster', name, true]],
      `${o.kind} ${o.metadata.name}`,
    );
  const cluster = await getJson<ApiObject>('cluster', name);
  const kcp = made.items.find((o) => o.kind === 'KubeadmControlPlane')!;
  assert.deepEqual(cluster.spec.controlPlaneRef, {
    apiGroup: 'controlplane.cluster.x-k8s.io',
    kind: 'KubeadmControlPlane',
    name: kcp.metadata.name,
  });
  assert.equal(kcp.spec.version, older);
  assert.equal(condition(cluster, 'TopologyReconciled')?.reason, 'ReconcileSucceeded');
  const workerMachines = await getJson<{ items: ApiObject[] }>(
    'machines',
    '-l',
    `cluster.x-k8s.io/cluster-name=${name},!cluster.x-k8s.io/control-plane`,
  );
  assert.deepEqual(
    workerMachines.items.map((m) => m.spec.taints),
    [[taint]],
    'the worker Machine object shows its taint',
  );
  const classObjects = await getJson<{ items: ApiObject[] }>(
    'clusterclasses,kubeadmcontrolplanetemplates,localclustertemplates',
  );
  assert.ok(classObjects.items.length >= 3);
  for (const o of classObjects.items) assert.equal(o.metadata.ownerReferences, undefined, o.metadata.name);

  const described = await runProgram(clusterctlPath(), [
    'describe',
    'cluster',
    name,
    '--show-conditions',
    'all',
    '--kubeconfig',
    stack.kubeconfigFile,
  ]);
  console.log(described.stdout);
  assert.equal(described.code, 0, described.stderr);
  assert.match(described.stdout, new RegExp(`KubeadmControlPlane default/${kcp.metadata.name}, ${older}`));
  assert.match(described.stdout, new RegExp(`MachineDeployment default/${name}-md-0-\\w+, ${older}`));
  assert.match(described.stdout, /TopologyReconciled\s+True\s+ReconcileSucceeded/);

  // A version change made with kubectl: the control plane first, then the workers; no worker runs a version its
  // control plane does not.
  const mdName = made.items.find((o) => o.kind === 'MachineDeployment')!.metadata.name;
  const patched = await patchVersion(newer);
  assert.equal(patched.code, 0, patched.stderr);
  const reasons = new Set<string>();
  let [heldShown, shownNewer] = [false, false];
  await until(
    `every machine of ${name} at ${newer}`,
    async () => {
      // The MachineDeployment object first: a Machine at the new version means it was released before.
      const mdObject = await getJson<MachineDeploymentObject>('machinedeployment', mdName);
      const [machines, now] = await Promise.all([
        getJson<{ items: MachineObject[] }>('machines', '-l', `cluster.x-k8s.io/cluster-name=${name}`),
        getJson<ApiObject>('cluster', name),
      ]);
      reasons.add(condition(now, 'TopologyReconciled')?.reason ?? '');
      const controlPlane = machines.items.filter((m) => 'cluster.x-k8s.io/control-plane' in m.metadata.labels);
      const workers = machines.items.filter((m) => !('cluster.x-k8s.io/control-plane' in m.metadata.labels));
      const listed = machines.items.map((m) => `${m.metadata.name} ${m.spec.version} ${m.status?.phase}`).join(', ');
      if (workers.some((m) => m.spec.version === newer))
        assert.ok(
          controlPlane.some((m) => m.spec.version === newer && m.status?.phase === 'Running'),
          `a worker at ${newer} before its control plane: ${listed}`,
        );
      // As Cluster API's topology controller writes it: the workers' new version only at their turn.
      if (mdObject.spec.template.spec.version === newer) {
        assert.ok(
          controlPlane.some((m) => m.spec.version === newer && m.status?.phase === 'Running'),
          `the MachineDeployment object named ${newer} while its control plane did not run it: ${listed}`,
        );
        shownNewer = true;
      } else heldShown = true;
      return (
        machines.items.length === 2 &&
        machines.items.every((m) => m.spec.version === newer && m.status?.phase === 'Running')
      );
    },
    { timeoutMs: 300_000, intervalMs: 500 },
  );
  assert.ok(reasons.has('ClusterUpgrading'), `TopologyReconciled said ${[...reasons].join(', ')}`);
  assert.ok(heldShown, `the MachineDeployment object kept ${older} while it was held`);
  await until('the MachineDeployment object at the new version', async () => {
    const o = await getJson<MachineDeploymentObject>('machinedeployment', mdName);
    return shownNewer || o.spec.template.spec.version === newer;
  });

  // A made object deleted by hand is made again, as Cluster API's topology controller makes it again.
  const workersTemplate = (await getJson<MachineDeploymentObject>('machinedeployment', mdName)).spec.template.spec
    .infrastructureRef.name;
  const template = await getJson<ApiObject>('localmachinetemplate', workersTemplate);
  const removed = await stack.kubectl(undefined, 'delete', 'localmachinetemplate', workersTemplate);
  assert.equal(removed.code, 0, removed.stderr);
  await until(`${workersTemplate} made again`, async () => {
    const again = await stack.kubectl(undefined, 'get', 'localmachinetemplate', workersTemplate, '-o', 'json');
    return again.code === 0 && (JSON.parse(again.stdout) as ApiObject).metadata.uid !== template.metadata.uid;
  });
  await until('the topology reconciled at the new version', async () => {
    const now = await getJson<ApiObject>('cluster', name);
    return condition(now, 'TopologyReconciled')?.reason === 'ReconcileSucceeded';
  });
  assert.equal((await getJson<ApiObject>('kubeadmcontrolplane', kcp.metadata.name)).spec.version, newer);

  // Refused at kubectl apply, with Cluster API's words.
  const downgrade = await patchVersion(older);
  assert.notEqual(downgrade.code, 0);
  assert.match(downgrade.stderr, /spec\.topology\.version: version cannot be decreased/);

  // A scale made with capt is shown on the Cluster's topology, and the MachineDeployment object follows it.
  const md = made.items.find((o) => o.kind === 'MachineDeployment')!.metadata.name;
  const scaled = await stack.capt('scale', 'machinedeployment', md, '--replicas', '2', '--wait');
  assert.equal(scaled.code, 0, scaled.stderr);
  await until('the scale on the topology and the MachineDeployment object', async () => {
    const [now, object] = await Promise.all([
      getJson<ApiObject>('cluster', name),
      getJson<ApiObject>('machinedeployment', md),
    ]);
    const topology = now.spec.topology as { workers: { machineDeployments: { replicas: number }[] } };
    return topology.workers.machineDeployments[0]!.replicas === 2 && object.spec.replicas === 2;
  });

  // Deleted through its workflow: what the topology made goes with the Cluster, the class and its templates stay.
  const deleted = await stack.kubectl(undefined, 'delete', 'cluster', name, '--timeout=5m');
  assert.equal(deleted.code, 0, deleted.stderr);
  await until('the objects made of the topology gone', async () => {
    const left = await getJson<{ items: ApiObject[] }>(
      'kubeadmcontrolplanes,machinedeployments,machinesets,machines,machinehealthchecks,localclusters,localmachinetemplates,kubeadmconfigtemplates',
      '-l',
      `cluster.x-k8s.io/cluster-name=${name}`,
    );
    return left.items.length === 0;
  });
  assert.equal(
    (await getJson<{ items: ApiObject[] }>('clusterclasses,kubeadmcontrolplanetemplates,localclustertemplates')).items
      .length,
    classObjects.items.length,
  );
  assert.deepEqual(await readdir(machinesDir(join(stack.home, 'local', 'default', name))).catch(() => []), []);
});
