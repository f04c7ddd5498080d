import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { test } from 'node:test';
import { clusterDir, machinesDir } from '../../providers/local/layout';
import type { ClusterModel, ControlPlaneModel } from '../../src/api/model';
import { failedMachines } from '../../src/client/capt-client';
import { appliedText } from '../../src/cli/apply-text';
import type { OwnerStatus } from '../../src/contract/owner';
import { KubeClient } from '../../src/kube/kube-client';
import { quickstartModel } from '../fixtures/cluster-agreement';
import { harnessWithClient } from '../fixtures/machine-harness';
import { until } from '../fixtures/until';

const suite = harnessWithClient();
const CLUSTER = 'cpip';
const KCP = `${CLUSTER}-control-plane`;
const kcpRef = `kubeadmcontrolplane.controlplane.cluster.x-k8s.io/${KCP}`;

const status = () => suite.client.ownerStatus('kubeadmcontrolplane', 'default', KCP);
const names = (s: OwnerStatus) => s.machines.map((m) => m.name).sort();
const describeRecords = (s: OwnerStatus | undefined) =>
  `${s?.stepReason}: ${s?.step} [${s?.machines.map((m) => `${m.name} ${m.phase}${m.updating ? ' updating' : ''}${m.deleting ? ' deleting' : ''}`).join(', ')}]`;

/** The cluster with 3 control-plane machines and no worker; its kubelets' max-pods from init and join, when given. */
function manifest(pods: { init?: string; join?: string } = {}, inPlaceUpdates?: false): ClusterModel {
  const model = quickstartModel(CLUSTER, { CONTROL_PLANE_MACHINE_COUNT: '3', WORKER_MACHINE_COUNT: '0' });
  const cp: ControlPlaneModel = structuredClone(model.controlPlane);
  for (const [from, value] of Object.entries(pods)) {
    const section = from === 'init' ? cp.kubeadmConfigSpec.initConfiguration! : cp.kubeadmConfigSpec.joinConfiguration!;
    section.nodeRegistration = {
      ...section.nodeRegistration,
      kubeletExtraArgs: { ...section.nodeRegistration?.kubeletExtraArgs, 'max-pods': value },
    };
  }
  return { ...model, controlPlane: { ...cp, ...(inPlaceUpdates === false ? { inPlaceUpdates } : {}) } };
}

/** Applies `model` and follows the rollout to its end: never a fourth machine, never two updating at once. */
async function rolledOutInPlace(model: ClusterModel, revision: number): Promise<OwnerStatus> {
  await suite.client.apply([model]);
  const dirs = async () =>
    (await readdir(machinesDir(clusterDir('default', CLUSTER))).catch(() => [] as string[])).filter((d) =>
      d.startsWith(`${KCP}-`),
    );
  return until(`${KCP} at revision ${revision}, updated in place`, status, {
    done: async (s) => {
      assert.ok((await dirs()).length <= 3, `no machine surged: ${await dirs()}`);
      const updating = s.machines.filter((m) => m.updating);
      assert.ok(updating.length <= 1, `one machine updated at a time: ${describeRecords(s)}`);
      return s.revision === revision && s.rolloutComplete && s.machines.every((m) => !m.updating);
    },
    timeoutMs: 180_000,
    intervalMs: 200,
    describe: describeRecords,
  });
}

test("a KubeadmControlPlane's new kubelet arguments reach its 3 machines in place, one at a time after a preflight (init's to the first machine, join's to the others); opted out, they are replaced", async () => {
  await suite.client.apply([manifest()]);
  const ready = await suite.client.waitForCluster('default', CLUSTER, () => undefined, 600_000);
  assert.equal(ready.phase, 'Provisioned', failedMachines(ready));
  const before = await status();
  assert.equal(before.machines.length, 3);
  // The first machine ran kubeadm init: its kubelet takes the init configuration's arguments.
  const [first, ...joined] = [...before.machines].sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  const kube = new KubeClient(await suite.client.kubeconfig('default', CLUSTER));
  const pods = async () => {
    const statuses = await suite.client.machineStatuses('default', names(before));
    const nodes = await kube.listNodes();
    return Object.fromEntries(
      statuses.map((m) => [m.name, nodes.find((n) => n.metadata?.name === m.nodeRef)?.status?.capacity?.pods]),
    );
  };
  const expectPods = (init: string, join: string) =>
    until(`Nodes with max-pods ${init} (init) and ${join} (join)`, pods, {
      done: (p) => p[first!.name] === init && joined.every((m) => p[m.name] === join),
      timeoutMs: 30_000,
      describe: (p) => JSON.stringify(p),
    });
  await expectPods('110', '110');

  // The dry run names every machine as updated in place.
  const both = manifest({ init: '200', join: '180' });
  const preview = (await suite.client.apply([both], { dryRun: true })).find((o) => o.ref === kcpRef)!;
  assert.deepEqual(preview.preview?.updatedInPlace?.sort(), names(before), JSON.stringify(preview.preview));
  assert.deepEqual(preview.preview?.replaced, []);
  assert.match(appliedText(preview, true), /would update 3 machines in place/);

  const updated = await rolledOutInPlace(both, 2);
  assert.deepEqual(names(updated), names(before), `no machine replaced: ${describeRecords(updated)}`);
  await expectPods('200', '180');
  for (const m of await suite.client.machineStatuses('default', names(before))) {
    assert.equal(m.stepReason, 'Running');
    assert.match(m.step, /updated in place/);
  }
  const steps = await suite.client.clusterStatus('default', CLUSTER);
  assert.equal(steps.controlPlane?.failedMachines ?? 0, 0);

  // Only the init configuration's arguments: the first machine restarts its kubelet, the others take the
  // revision as they run (their kubelets read the join configuration, which did not change).
  const initOnly = await rolledOutInPlace(manifest({ init: '210', join: '180' }), 3);
  assert.deepEqual(names(initOnly), names(before));
  await expectPods('210', '180');

  // Opted out: the same kind of change replaces the machines, and the dry run says why.
  const optedOut = manifest({ init: '210', join: '190' }, false);
  const refused = (await suite.client.apply([optedOut], { dryRun: true })).find((o) => o.ref === kcpRef)!;
  assert.deepEqual(refused.preview?.replaced.sort(), names(before));
  assert.equal(refused.preview?.replacedWhy, 'in-place updates are turned off for this KubeadmControlPlane');
  await suite.client.apply([optedOut]);
  await until(`a new control-plane machine replacing one of ${KCP}`, status, {
    done: (s) => s.machines.some((m) => !names(before).includes(m.name)),
    timeoutMs: 180_000,
    describe: describeRecords,
  });

  await suite.client.deleteCluster('default', CLUSTER);
  await suite.client.waitForDeletion('default', CLUSTER, () => undefined, 300_000);
});
