import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { availableKubernetesVersions } from '../../src/tools';
import { devStackForFile } from '../fixtures/dev-stack';
import { until } from '../fixtures/until';

/**
 * A MachineHealthCheck that only reports (`unhealthyLessThanOrEqualTo: 0`), applied with kubectl: the worker whose
 * kubelet stops shows Cluster API's HealthCheckSucceeded False on its Machine object, the check's status says no
 * remediation is allowed, the machine is left running, and it shows True again once repaired.
 */

const cluster = 'hc';
const workers = `${cluster}-md-0`;
const stack = devStackForFile(cluster);

type Condition = { type: string; status: string; reason: string; message: string };
type Shown = { metadata: { deletionTimestamp?: string }; status?: { phase?: string; conditions?: Condition[] } };

test("a report-only MachineHealthCheck marks the broken worker's Machine HealthCheckSucceeded False and remediates nothing", async () => {
  const generated = await stack().generateCluster(cluster, availableKubernetesVersions().at(-1)!, 1);
  const check = {
    apiVersion: 'cluster.x-k8s.io/v1beta2',
    kind: 'MachineHealthCheck',
    metadata: { name: `${workers}-report`, namespace: 'default' },
    spec: {
      clusterName: cluster,
      selector: { matchLabels: { 'cluster.x-k8s.io/deployment-name': workers } },
      checks: {
        unhealthyNodeConditions: [
          { type: 'Ready', status: 'Unknown', timeoutSeconds: 1 },
          { type: 'Ready', status: 'False', timeoutSeconds: 1 },
        ],
      },
      remediation: { triggerIf: { unhealthyLessThanOrEqualTo: 0 } },
    },
  };
  await stack().applyAndWait(`${generated}\n---\n${JSON.stringify(check)}`, cluster);
  // The Cluster can show Available a pass before the bridge has made the worker's Machine object.
  const worker = await until("the worker's Machine object", async () =>
    (
      await stack().kubectl(
        undefined,
        'get',
        'machines',
        '-l',
        `cluster.x-k8s.io/deployment-name=${workers}`,
        '-o',
        'name',
      )
    ).stdout
      .trim()
      .replace('machine.cluster.x-k8s.io/', ''),
  );
  const shown = async () =>
    JSON.parse((await stack().kubectl(undefined, 'get', 'machine', worker, '-o', 'json')).stdout) as Shown;
  const judged = async (status: string) =>
    until(`${worker} HealthCheckSucceeded ${status}`, async () => {
      const c = (await shown()).status?.conditions?.find((x) => x.type === 'HealthCheckSucceeded');
      return c?.status === status && c;
    });
  assert.equal((await judged('True')).reason, 'HealthCheckSucceeded');

  const broken = await stack().capt('dev', 'break', 'machine', worker, '--kubelet');
  assert.equal(broken.code, 0, broken.stderr);
  const unhealthy = await judged('False');
  assert.equal(unhealthy.reason, 'UnhealthyNode');
  assert.match(unhealthy.message, new RegExp(`^${check.metadata.name}: Ready=Unknown for \\d+s \\(timeout 1s\\)$`));
  const mhc = JSON.parse(
    (await stack().kubectl(undefined, 'get', 'machinehealthcheck', check.metadata.name, '-o', 'json')).stdout,
  ) as { status: { currentHealthy: number; remediationsAllowed: number; conditions: Condition[] } };
  assert.deepEqual(
    [mhc.status.currentHealthy, mhc.status.remediationsAllowed],
    [0, 0],
    'the check counts it unhealthy and allows no remediation',
  );
  assert.equal(mhc.status.conditions.find((c) => c.type === 'RemediationAllowed')?.status, 'False');
  // Only reported: the machine stays, running, past the check's timeout many times over.
  await sleep(5000);
  const kept = await shown();
  assert.equal(kept.metadata.deletionTimestamp, undefined, 'not remediated');
  assert.equal(kept.status?.phase, 'Running');

  const repaired = await stack().capt('dev', 'repair', 'machine', worker);
  assert.equal(repaired.code, 0, repaired.stderr);
  await judged('True');

  const deleted = await stack().kubectl(undefined, 'delete', 'cluster', cluster, '--timeout=300s');
  assert.equal(deleted.code, 0, deleted.stderr);
});
