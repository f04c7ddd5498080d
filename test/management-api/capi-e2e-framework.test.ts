import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseAllDocuments, stringify } from 'yaml';
import { availableKubernetesVersions, e2eDriverPath } from '../../src/tools';
import { machinesDir } from '../../providers/local/layout';
import { metricTotal } from '../fixtures/apiserver-requests';
import { runProgram } from '../fixtures/capt-cli';
import { devStackForFile } from '../fixtures/dev-stack';
import { until } from '../fixtures/until';

/**
 * Cluster API's own e2e framework (sigs.k8s.io/cluster-api/test/framework at the pinned release), run by
 * bench/capi/module/e2e-driver against `capt dev start`'s management API: a cluster applied with kubectl at the
 * older Kubernetes version passes the framework's waiters for the cluster, its control plane and its
 * MachineDeployment's nodes, is upgraded by the framework's helpers to the newer version, and is deleted by its
 * DeleteClusterAndWait, which also finds no Cluster API object left in the namespace.
 */

const [older, newer] = availableKubernetesVersions().slice(-2) as [string, string];
const cluster = 'e2e';
/** The driver's steps, named after the framework's functions they call, in order. */
const steps = [
  'DiscoveryAndWaitForCluster',
  'DiscoveryAndWaitForControlPlaneInitialized',
  'WaitForControlPlaneAndMachinesReady',
  'DiscoveryAndWaitForMachineDeployments',
  'UpgradeControlPlaneAndWaitForUpgrade',
  'UpgradeMachineDeploymentsAndWait',
  'WaitForNodesReady',
  'DeleteClusterAndWait',
];
const stack = devStackForFile(cluster);

test("Cluster API's e2e framework: its waiters, upgrade helpers and DeleteClusterAndWait pass against capt's objects", async () => {
  const generated = await stack().generateCluster(cluster, older, 2);
  // Failure domains on the LocalCluster, as Cluster API's e2e DevCluster has them: the framework's
  // WaitForControlPlaneAndMachinesReady then checks each control-plane machine is in one marked for control planes.
  const manifest = parseAllDocuments(generated)
    .map((d) => d.toJS() as { kind: string; spec?: Record<string, unknown> })
    .map((d) =>
      d.kind === 'LocalCluster'
        ? {
            ...d,
            spec: {
              failureDomains: [
                { name: 'fd1', controlPlane: true },
                { name: 'fd2', controlPlane: true },
                { name: 'fd3', controlPlane: false },
              ],
            },
          }
        : d,
    )
    .map((d) => stringify(d))
    .join('---\n');
  const applied = await stack().kubectl(manifest, 'apply', '-f', '-');
  assert.equal(applied.code, 0, applied.stderr);

  // The control-plane Machine object names the domain capt placed it in, so the framework's check has one to check.
  await until('the control-plane Machine placed in fd1', async () => {
    const placed = await stack().kubectl(
      undefined,
      'get',
      'machines',
      '-l',
      'cluster.x-k8s.io/control-plane',
      '-o',
      'jsonpath={.items[*].spec.failureDomain}',
    );
    return placed.stdout.trim() === 'fd1';
  });
  const args = ['-kubeconfig', stack().kubeconfigFile, '-cluster', cluster, '-upgrade-to', newer];
  const run = await runProgram(e2eDriverPath(), [...args, '-timeout', '10m', '-ginkgo.no-color']);
  const ran = [...run.stdout.matchAll(/^step (\S+): (\w+) in (\S+)$/gm)];
  console.log(ran.map((m) => m[0]).join('\n'));
  assert.equal(run.code, 0, `${run.stdout.slice(-6000)}\n${run.stderr.slice(-2000)}`);
  assert.deepEqual(
    ran.map((m) => [m[1], m[2]]),
    steps.map((s) => [s, 'passed']),
  );

  // Nothing is left: no Cluster API object, no machine in capt's workflows, no local machine's directory.
  const objects = await stack().kubectl(
    undefined,
    'get',
    'clusters,machinedeployments,machinesets,machines,kubeadmcontrolplanes,localmachinetemplates,kubeadmconfigtemplates',
    '-A',
    '-o',
    'name',
  );
  assert.equal(objects.code, 0, objects.stderr);
  assert.equal(objects.stdout.trim(), '');
  // The Machines the bridge made (three, then at the upgrade a new control-plane machine and the workers' one surge
  // machine, the two workers updated in place) were not sent to the admission webhooks: their matchConditions left
  // them out, each creation and each later write.
  const metrics = (await stack().kubectl(undefined, 'get', '--raw', '/metrics')).stdout;
  const leftOut = (operation: string) =>
    metricTotal(
      metrics,
      'apiserver_admission_match_condition_exclusions_total',
      (l) => l.includes('name="default.capt.cluster.x-k8s.io"') && l.includes(`operation="${operation}"`),
    );
  assert.ok(
    leftOut('CREATE') >= 5 && leftOut('UPDATE') >= 6,
    `left out: ${leftOut('CREATE')} creations, ${leftOut('UPDATE')} updates`,
  );
  const machines = await stack().capt('get', 'machines', '-A', '-o', 'json');
  assert.deepEqual(JSON.parse(machines.stdout), { items: [] });
  const machineDirs = machinesDir(join(stack().home, 'local', 'default', cluster));
  assert.deepEqual(await readdir(machineDirs).catch(() => []), []);
});
