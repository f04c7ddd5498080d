import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { clusterDir, machinesDir } from '../../providers/local/layout';
import { loadManifests } from '../../src/api/load-manifests';
import type { ClusterModel } from '../../src/api/model';
import { failedMachines } from '../../src/client/capt-client';
import { machineMaxAgeAnnotation } from '../../src/contract/machine-max-age';
import type { OwnerStatus } from '../../src/contract/owner';
import { runCapt } from '../fixtures/capt-cli';
import { harnessWithClient } from '../fixtures/machine-harness';
import { until } from '../fixtures/until';

const root = join(__dirname, '../../..');
const suite = harnessWithClient();
const h = suite.harness;
const MD = 'rp-md-0';
const maxAge = 30;

const status = () => suite.client.ownerStatus('machinedeployment', 'default', MD);
const names = (s: OwnerStatus) => s.machines.map((m) => m.name).sort();
const describeRecords = (s: OwnerStatus | undefined) =>
  `${s?.step} [${s?.machines.map((m) => `${m.name} ${m.phase}${m.deleting ? ' deleting' : ''} created ${m.createdAt}`).join(', ')}]`;

/** The quickstart's cluster rp, 1 control plane and 2 workers, with the MachineDeployment's max age annotated. */
async function manifest(paused: boolean): Promise<ClusterModel> {
  const text = (await readFile(join(root, 'examples/quickstart.yaml'), 'utf8')).replace(
    /(kind: MachineDeployment\nmetadata:\n)/,
    `$1  annotations:\n    ${machineMaxAgeAnnotation}: ${maxAge}s\n`,
  );
  const [model] = loadManifests([{ file: 'quickstart.yaml', text }], {
    CLUSTER_NAME: 'rp',
    CONTROL_PLANE_MACHINE_COUNT: '1',
    WORKER_MACHINE_COUNT: '2',
  }) as [ClusterModel];
  assert.equal(model.machineDeployments[0]!.machineMaxAgeSeconds, maxAge, 'the annotation reached the model');
  return { ...model, paused };
}

/**
 * Until every machine of `before` is replaced by Running ones: samples the provider's machines and the owner's
 * records twice a second, as a rollout's bounds (maxSurge 1, maxUnavailable 0 for 2 replicas) would be checked.
 */
async function repaved(before: string[]): Promise<{ after: OwnerStatus; steps: Set<string> }> {
  const steps = new Set<string>();
  const after = await until('every machine older than the max age replaced', status, {
    done: async (s) => {
      steps.add(s.step);
      const dirs = (await readdir(machinesDir(clusterDir('default', 'rp'))).catch(() => [] as string[])).filter((d) =>
        d.startsWith(`${MD}-`),
      );
      assert.ok(dirs.length <= 3, `at most replicas + maxSurge provider machines: ${dirs.join(', ')}`);
      const available = s.machines.filter((m) => !m.deleting && m.phase === 'Running').length;
      assert.ok(available >= 2, `never fewer than replicas - maxUnavailable running: ${describeRecords(s)}`);
      return (
        s.machines.length === 2 &&
        s.readyReplicas === 2 &&
        s.machines.every((m) => !before.includes(m.name) && m.phase === 'Running')
      );
    },
    timeoutMs: 240_000,
    intervalMs: 500,
    describe: describeRecords,
  });
  return { after, steps };
}

test(`a MachineDeployment with ${machineMaxAgeAnnotation} ${maxAge}s replaces its machines as they reach that age, within its rollout bounds, never while its cluster is paused`, async () => {
  await suite.client.apply([await manifest(false)]);
  const ready = await suite.client.waitForCluster('default', 'rp', () => undefined, 600_000);
  assert.equal(ready.phase, 'Provisioned', failedMachines(ready));
  const first = await status();
  assert.equal(first.repave?.maxAgeSeconds, maxAge);
  const oldest = Math.min(...first.machines.map((m) => Date.parse(m.createdAt)));
  assert.equal(first.repave?.nextDueAt, new Date(oldest + maxAge * 1000).toISOString(), 'the soonest due time');
  const described = await runCapt({ TEMPORAL_ADDRESS: h.env.address }, 'describe', 'cluster', 'rp');
  assert.match(
    described.stdout,
    new RegExp(
      `Scheduled:\\n  MachineDeployment/${MD}: repave: machines older than ${maxAge}s are replaced; the next is due at `,
    ),
  );

  // The first generation reaches its age: each machine is replaced, a surge at a time, with no spec change.
  const { after: second, steps } = await repaved(names(first));
  assert.ok(
    [...steps].some((s) => s.includes(`repaving`) && s.includes(machineMaxAgeAnnotation)),
    `a step said why machines were replaced: ${[...steps].join(' | ')}`,
  );
  assert.equal(second.revision, first.revision, 'a repave makes no new revision');
  assert.ok(second.machines.every((m) => Date.parse(m.createdAt) >= oldest + maxAge * 1000));

  // Paused, the cluster replaces nothing, even once its machines are past their age.
  await suite.client.apply([await manifest(true)]);
  await until('the MachineDeployment to hear of the pause', status, {
    done: (s) => s.stepReason === 'ClusterPaused',
    timeoutMs: 60_000,
    describe: describeRecords,
  });
  const held = await status();
  const dueAt = Date.parse(held.repave!.nextDueAt!);
  await sleep(Math.max(0, dueAt - Date.now()) + 8000);
  const stillHeld = await status();
  assert.deepEqual(names(stillHeld), names(held), `no machine replaced while paused: ${describeRecords(stillHeld)}`);
  assert.ok(Date.now() > dueAt, 'the wait went past the due time');

  // Unpaused, the machines past their age are replaced.
  await suite.client.apply([await manifest(false)]);
  await repaved(names(held));

  await suite.client.deleteCluster('default', 'rp');
  await suite.client.waitForDeletion('default', 'rp', () => undefined, 300_000);
});
