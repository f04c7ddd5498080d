import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { clusterDir, machinesDir } from '../../providers/local/layout';
import { loadManifests } from '../../src/api/load-manifests';
import type { ClusterModel, MachineDeploymentModel } from '../../src/api/model';
import { failedMachines } from '../../src/client/capt-client';
import { appliedText } from '../../src/cli/apply-text';
import { inPlaceUpdatesAnnotation } from '../../src/contract/in-place';
import type { OwnerStatus } from '../../src/contract/owner';
import { KubeClient } from '../../src/kube/kube-client';
import { availableKubernetesVersions } from '../../src/tools';
import { quickstartModel } from '../fixtures/cluster-agreement';
import { harnessWithClient } from '../fixtures/machine-harness';
import { until } from '../fixtures/until';

const root = join(__dirname, '../../..');
const suite = harnessWithClient();
const [older, newer] = availableKubernetesVersions().slice(-2) as [string, string];
const CLUSTER = 'ip';
const MD = 'ip-md-0';
const OPTED_OUT = 'ip-md-r';

const status = (md: string) => suite.client.ownerStatus('machinedeployment', 'default', md);
const names = (s: OwnerStatus) => s.machines.map((m) => m.name).sort();
const describeRecords = (s: OwnerStatus | undefined) =>
  `${s?.stepReason}: ${s?.step} [${s?.machines.map((m) => `${m.name} ${m.version} ${m.phase}${m.updating ? ' updating' : ''}${m.deleting ? ' deleting' : ''}`).join(', ')}]`;

/**
 * Cluster ip: the control plane at the newer version, 3 workers that update in place and 2 opted out, at `workers`;
 * given `maxPods`, the 3 workers' kubelets run with that max-pods.
 */
function manifest(workers: string, maxPods?: string): ClusterModel {
  const model = quickstartModel(CLUSTER, {
    KUBERNETES_VERSION: newer,
    CONTROL_PLANE_MACHINE_COUNT: '1',
    WORKER_MACHINE_COUNT: '3',
  });
  const md = model.machineDeployments[0]!;
  const at = (d: MachineDeploymentModel): MachineDeploymentModel => ({
    ...d,
    template: { ...d.template, version: workers },
  });
  const optedOut: MachineDeploymentModel = { ...md, name: OPTED_OUT, replicas: 2, inPlaceUpdates: false };
  return { ...model, machineDeployments: [maxPods ? withMaxPods(at(md), maxPods) : at(md), at(optedOut)] };
}

function withMaxPods(d: MachineDeploymentModel, maxPods: string): MachineDeploymentModel {
  const config = d.template.bootstrap.config;
  const nodeRegistration = config.joinConfiguration?.nodeRegistration;
  const kubeletExtraArgs = { ...nodeRegistration?.kubeletExtraArgs, 'max-pods': maxPods };
  const joinConfiguration = {
    ...config.joinConfiguration,
    nodeRegistration: { ...nodeRegistration, kubeletExtraArgs },
  };
  return {
    ...d,
    template: { ...d.template, bootstrap: { ...d.template.bootstrap, config: { ...config, joinConfiguration } } },
  };
}

test(`${inPlaceUpdatesAnnotation} takes "true" or "false", and is refused otherwise where it is written`, async () => {
  const text = (await readFile(join(root, 'examples/quickstart.yaml'), 'utf8')).replace(
    /(kind: MachineDeployment\nmetadata:\n)/,
    `$1  annotations:\n    ${inPlaceUpdatesAnnotation}: "VALUE"\n`,
  );
  const load = (value: string) =>
    loadManifests([{ file: 'q.yaml', text: text.replace('VALUE', value) }], { CLUSTER_NAME: 'q' })[0]!
      .machineDeployments[0]!;
  assert.equal(load('false').inPlaceUpdates, false);
  assert.equal(load('true').inPlaceUpdates, undefined, 'the default: not a field, so older specs compare equal');
  assert.throws(
    () => load('sometimes'),
    new RegExp(
      `MachineDeployment/q-md-0 at metadata\\.annotations\\.${inPlaceUpdatesAnnotation.replace(/\./g, '\\.')}: "sometimes" is not a value it takes`,
    ),
  );
});

test(`a version change updates a MachineDeployment's workers in place (one surge machine with maxUnavailable 0), and replaces those of one opted out`, async () => {
  await suite.client.apply([manifest(older)]);
  const ready = await suite.client.waitForCluster('default', CLUSTER, () => undefined, 600_000);
  assert.equal(ready.phase, 'Provisioned', failedMachines(ready));
  const before = await status(MD);
  const beforeOptedOut = await status(OPTED_OUT);
  const created = Object.fromEntries(before.machines.map((m) => [m.name, m.createdAt]));

  // The dry run names which machines move in place and which are replaced, and why.
  const preview = await suite.client.apply([manifest(newer)], { dryRun: true });
  const of = (name: string) => preview.find((o) => o.ref === `machinedeployment.cluster.x-k8s.io/${name}`)!;
  assert.deepEqual(of(MD).preview?.updatedInPlace?.sort(), names(before));
  assert.deepEqual(of(MD).preview?.replaced, []);
  assert.deepEqual(of(OPTED_OUT).preview?.replaced.sort(), names(beforeOptedOut));
  assert.match(of(OPTED_OUT).preview?.replacedWhy ?? '', /in-place updates are turned off/);
  assert.match(
    appliedText(of(MD), true),
    new RegExp(`would update 3 machines in place[^:\n]*: ${names(before).join(', ')}`),
  );
  assert.deepEqual(names(await status(MD)), names(before), 'the dry run changed nothing');

  await suite.client.apply([manifest(newer)]);
  const dirs = async () =>
    (await readdir(machinesDir(clusterDir('default', CLUSTER))).catch(() => [] as string[])).filter((d) =>
      d.startsWith(`${MD}-`),
    );
  const after = await until(`${MD} updated in place to ${newer}`, () => status(MD), {
    done: async (s) => {
      // maxSurge 1, maxUnavailable 0: never more than 4 machines, never fewer than 3 available.
      assert.ok((await dirs()).length <= 4, `at most replicas + maxSurge provider machines: ${await dirs()}`);
      const available = s.machines.filter((m) => m.phase === 'Running' && !m.updating && !m.deleting);
      assert.ok(available.length >= 3, `never fewer than 3 available: ${describeRecords(s)}`);
      return (
        s.rolloutComplete && s.machines.length === 3 && s.machines.every((m) => m.version === newer && !m.updating)
      );
    },
    timeoutMs: 300_000,
    intervalMs: 300,
    describe: describeRecords,
  });
  const kept = names(after).filter((n) => n in created);
  assert.ok(kept.length >= 2, `at most one machine (the surge) is new: ${describeRecords(after)}`);
  for (const name of kept)
    assert.equal(after.machines.find((m) => m.name === name)!.createdAt, created[name], `${name} was not made again`);
  const current = after.machineSets!.at(-1)!;
  assert.deepEqual([current.revision, current.version, current.machines], [2, newer, 3]);

  // Each kept machine says it was updated, carries its new set's label and revision, and its Node runs the version.
  const machines = await suite.client.machineStatuses('default', kept);
  for (const m of machines) {
    assert.equal(m.version, newer);
    assert.equal(m.stepReason, 'Running');
    assert.match(m.step, new RegExp(`updated in place to ${newer}`));
    assert.equal(m.labels['cluster.x-k8s.io/set-name'], current.name);
    assert.equal(m.annotations['machinedeployment.clusters.x-k8s.io/revision'], '2');
  }
  const kube = new KubeClient(await suite.client.kubeconfig('default', CLUSTER));
  const nodes = await kube.listNodes();
  for (const m of machines) {
    const node = nodes.find((n) => n.metadata?.name === m.nodeRef);
    assert.equal(node?.status?.nodeInfo?.kubeletVersion, newer, `Node of ${m.name}`);
    assert.equal(node?.metadata?.labels?.['cluster.x-k8s.io/set-name'], undefined, 'set names stay off Nodes');
  }

  // The MachineDeployment that opted out replaced every machine.
  const replaced = await until(`${OPTED_OUT} replaced`, () => status(OPTED_OUT), {
    done: (s) => s.rolloutComplete && s.machines.length === 2 && s.machines.every((m) => m.version === newer),
    timeoutMs: 300_000,
    describe: describeRecords,
  });
  assert.deepEqual(
    names(replaced).filter((n) => names(beforeOptedOut).includes(n)),
    [],
    `no machine kept: ${describeRecords(replaced)}`,
  );

  // New kubelet arguments reach the same workers in place: their kubelets restart with max-pods 200.
  const beforeArgs = await status(MD);
  const argsPreview = await suite.client.apply([manifest(newer, '200')], { dryRun: true });
  const mdPreview = argsPreview.find((o) => o.ref === `machinedeployment.cluster.x-k8s.io/${MD}`)!;
  assert.deepEqual(mdPreview.preview?.updatedInPlace?.sort(), names(beforeArgs), JSON.stringify(mdPreview.preview));
  await suite.client.apply([manifest(newer, '200')]);
  const restarted = await until(`${MD} kubelets restarted with max-pods 200`, () => status(MD), {
    done: (s) =>
      s.rolloutComplete &&
      s.machineSets!.at(-1)!.revision === 3 &&
      s.machines.length === 3 &&
      s.machines.every((m) => !m.updating),
    timeoutMs: 300_000,
    describe: describeRecords,
  });
  const keptAgain = names(restarted).filter((n) => names(beforeArgs).includes(n));
  assert.ok(keptAgain.length >= 2, `at most one machine (the surge) is new: ${describeRecords(restarted)}`);
  const podsOf = async (name: string) => {
    const [m] = await suite.client.machineStatuses('default', [name]);
    return (await kube.listNodes()).find((n) => n.metadata?.name === m?.nodeRef)?.status?.capacity?.pods;
  };
  // The cluster agent posts a restarted kubelet's status at its next scan of the machines (about a second).
  for (const name of names(restarted))
    await until(`Node of ${name} with max-pods 200`, () => podsOf(name), {
      done: (pods) => pods === '200',
      timeoutMs: 30_000,
    });
  for (const m of await suite.client.machineStatuses('default', keptAgain))
    assert.match(m.step, new RegExp(`updated in place to ${newer}`));

  await suite.client.deleteCluster('default', CLUSTER);
  await suite.client.waitForDeletion('default', CLUSTER, () => undefined, 300_000);
});
