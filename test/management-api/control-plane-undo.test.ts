import assert from 'node:assert/strict';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { availableKubernetesVersions } from '../../src/tools';
import { machinesDir } from '../../providers/local/layout';
import { devStackForFile } from '../fixtures/dev-stack';
import { until } from '../fixtures/until';

/**
 * One desired state: a control plane's `capt rollout undo` is written back to its KubeadmControlPlane object (the
 * revision's version and its kubeadmConfigSpec, which the revision holds whole), and the workers held for the
 * version it left are written back to the version they kept, so kubectl shows what runs and the cluster waits for
 * nothing. Once the workers run the newer version too, the control plane's undo is refused.
 */

const [older, newer] = availableKubernetesVersions().slice(-2) as [string, string];
const cluster = 'undo';
const controlPlane = `${cluster}-control-plane`;
const workers = `${cluster}-md-0`;
const stack = devStackForFile(cluster);

type KubeadmControlPlaneObject = { spec: { version: string } & Record<string, unknown> };
type MachineDeploymentObject = { spec: { template: { spec: { version: string } } } };

test("a control plane's capt rollout undo mid-upgrade is written back to its object, and the held workers to the version they kept", async () => {
  const get = async <T>(kind: string, name: string) =>
    JSON.parse((await stack().kubectl(undefined, 'get', kind, name, '-o', 'json')).stdout) as T;
  await stack().applyAndWait(await stack().generateCluster(cluster, older, 1), cluster);
  const before = await get<KubeadmControlPlaneObject>('kubeadmcontrolplane', controlPlane);

  // An upgrade of both, with a flag of the apiserver's and a machine template that boots for 12 s, so the undo
  // comes mid-rollout: the control plane takes it, the workers wait for it.
  const slow = {
    apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta2',
    kind: 'LocalMachineTemplate',
    metadata: { name: `${cluster}-slow`, namespace: 'default' },
    spec: { template: { spec: { bootDelaySeconds: 12 } } },
  };
  assert.equal((await stack().kubectl(JSON.stringify(slow), 'apply', '-f', '-')).code, 0);
  const upgrade = {
    spec: {
      version: newer,
      machineTemplate: { spec: { infrastructureRef: { name: slow.metadata.name } } },
      kubeadmConfigSpec: {
        clusterConfiguration: { apiServer: { extraArgs: [{ name: 'profiling', value: 'false' }] } },
      },
    },
  };
  const patch = (kind: string, name: string, body: object) =>
    stack().kubectl(undefined, 'patch', `${kind}/${name}`, '--type=merge', '-p', JSON.stringify(body));
  assert.equal((await patch('kubeadmcontrolplane', controlPlane, upgrade)).code, 0);
  assert.equal(
    (await patch('machinedeployment', workers, { spec: { template: { spec: { version: newer } } } })).code,
    0,
  );
  type Listed = {
    items: { pending: { kind: string; reason: string }[]; generation: number; observedGeneration: number }[];
  };
  const clusterStatus = async () =>
    (JSON.parse((await stack().capt('get', 'clusters', '-o', 'json')).stdout) as Listed).items[0]!;
  await until('the control plane rolling out the upgrade, the workers held', async () => {
    const { pending } = await clusterStatus();
    const reasonOf = (kind: string) => pending.find((p) => p.kind === kind)?.reason;
    return reasonOf('KubeadmControlPlane') === 'RollingOut' && reasonOf('MachineDeployment') === 'HeldForControlPlane';
  });

  const undone = await stack().capt(
    'rollout',
    'undo',
    `kubeadmcontrolplane/${controlPlane}`,
    '--wait',
    '--timeout',
    '5m',
  );
  assert.equal(undone.code, 0, undone.stderr);
  const bridgeLog = async () => (await readFile(join(stack().home, 'dev', 'bridge.log'), 'utf8')).slice(-4000);
  const shown = await until('the objects to show the undone control plane and the workers it held', async () => {
    const kcp = await get<KubeadmControlPlaneObject>('kubeadmcontrolplane', controlPlane);
    const md = await get<MachineDeploymentObject>('machinedeployment', workers);
    return kcp.spec.version === older && md.spec.template.spec.version === older && kcp;
  }).catch(async (err: Error) => assert.fail(`${err.message}\n${await bridgeLog()}`));
  // The revision's kubeadmConfigSpec (the flag gone) and machine template: the object's spec as it was.
  assert.deepEqual(shown.spec, before.spec);

  // The objects applied again: the cluster holds nothing more, and the workers never took the newer version.
  await until('the cluster to wait for nothing', async () => {
    const c = await clusterStatus();
    return c.pending.length === 0 && c.observedGeneration === c.generation;
  });
  const history = await stack().capt('rollout', 'history', `kubeadmcontrolplane/${controlPlane}`);
  assert.match(history.stdout, /^3 +v\S+ .* undo to revision 1 *\S*$/m);
  assert.doesNotMatch(history.stdout, /^4 /m, 'applying the written-back objects made no new revision');
  const listed = async (kind: string, selector: string, output: string) =>
    (await stack().kubectl(undefined, 'get', kind, '-l', selector, '-o', output)).stdout.trim();
  // The undone rollout's new control-plane machine, deleted mid-boot, leaves its object once its workflow has ended.
  await until(
    'the Machines of the control plane and its worker, at the version they kept',
    async () =>
      (await listed('machines', `cluster.x-k8s.io/cluster-name=${cluster}`, 'jsonpath={.items[*].spec.version}')) ===
      `${older} ${older}`,
    { timeoutMs: 120_000 },
  );
  const machineSets = await listed('machinesets', `cluster.x-k8s.io/deployment-name=${workers}`, 'name');
  assert.equal(machineSets.split('\n').length, 1, 'the workers made no new MachineSet');

  // Upgraded whole, the control plane's undo is refused: its workers would be newer than its apiserver.
  assert.equal((await patch('kubeadmcontrolplane', controlPlane, { spec: { version: newer } })).code, 0);
  assert.equal(
    (await patch('machinedeployment', workers, { spec: { template: { spec: { version: newer } } } })).code,
    0,
  );
  await until('the control plane and the workers upgraded', async () => {
    const versions = await listed(
      'machines',
      `cluster.x-k8s.io/cluster-name=${cluster}`,
      'jsonpath={.items[*].spec.version}',
    );
    const c = await clusterStatus();
    return c.pending.length === 0 && versions === `${newer} ${newer}`;
  });
  const refused = await stack().capt('rollout', 'undo', `kubeadmcontrolplane/${controlPlane}`);
  assert.notEqual(refused.code, 0);
  assert.match(
    refused.stderr,
    new RegExp(
      `KubeadmControlPlane default/${controlPlane} at spec\\.version: undo to revision \\d+ would take the control plane to ${older}, older than its workers \\(MachineDeployment ${workers} at ${newer}\\)`,
    ),
  );
  const kept = await stack().capt('rollout', 'history', `kubeadmcontrolplane/${controlPlane}`);
  assert.match(kept.stdout.trim().split('\n').at(-1)!, new RegExp(`^\\d+ +${newer.replace(/\./g, '\\.')} `));

  const deleted = await stack().kubectl(undefined, 'delete', 'cluster', cluster, '--timeout=300s');
  assert.equal(deleted.code, 0, deleted.stderr);
  assert.deepEqual(await readdir(machinesDir(join(stack().home, 'local', 'default', cluster))).catch(() => []), []);
});
