import { setTimeout as sleep } from 'node:timers/promises';
import type { MachineDeploymentModel } from '../src/api/model';
import { CaptClient } from '../src/client/capt-client';
import type { OwnerStatus } from '../src/contract/owner';
import { availableKubernetesVersions } from '../src/tools';
import { quickstartModel } from '../test/fixtures/cluster-agreement';
import { MachineHarness } from '../test/fixtures/machine-harness';
import { resultHeader, runBenchmark, writeResult } from './bench-result';
import { stopOnSignal } from './stop-on-signal';

/**
 * A version change of 10 workers updated in place against the same change replacing 10 workers: one cluster (1
 * control plane at the newer version), two MachineDeployments of 10 workers at the older one with the quickstart's
 * strategy (maxSurge 1, maxUnavailable 0), one of them opted out. Each is upgraded alone, one after the other, and
 * timed from the apply to a complete rollout with every machine on the new version. `node
 * dist/bench/in-place-update.bench.js [WORKERS]` writes bench/results/in-place-update-<WORKERS>.json.
 */

const workers = Number(process.argv[2] ?? 10);
const [older, newer] = availableKubernetesVersions().slice(-2) as [string, string];
const CLUSTER = 'inplace';

function manifest(versions: { inPlace: string; replaced: string }) {
  const model = quickstartModel(CLUSTER, {
    KUBERNETES_VERSION: newer,
    CONTROL_PLANE_MACHINE_COUNT: '1',
    WORKER_MACHINE_COUNT: String(workers),
  });
  const md = model.machineDeployments[0]!;
  const at = (d: MachineDeploymentModel, version: string) => ({ ...d, template: { ...d.template, version } });
  return {
    ...model,
    machineDeployments: [
      at({ ...md, name: `${CLUSTER}-in-place` }, versions.inPlace),
      at({ ...md, name: `${CLUSTER}-replaced`, inPlaceUpdates: false }, versions.replaced),
    ],
  };
}

async function rolledOut(client: CaptClient, md: string): Promise<OwnerStatus> {
  for (const deadline = Date.now() + 900_000; Date.now() < deadline; await sleep(250)) {
    const s = await client.ownerStatus('machinedeployment', 'default', md);
    if (s.rolloutComplete && s.machines.length === workers && s.machines.every((m) => m.version === newer)) return s;
  }
  throw new Error(`${md} did not roll out within 15 minutes`);
}

async function main(): Promise<void> {
  const h = new MachineHarness(undefined, { guard: false });
  await h.start();
  const client = await CaptClient.connect({ address: h.env.address });
  const { stop, letGo } = stopOnSignal("capt's stack and its machines", async () => {
    await client.close();
    await h.stop();
  });
  try {
    await client.apply([manifest({ inPlace: older, replaced: older })]);
    await client.waitForCluster('default', CLUSTER, () => undefined, 900_000);
    const timed = async (versions: { inPlace: string; replaced: string }, md: string) => {
      const before = (await client.ownerStatus('machinedeployment', 'default', md)).machines.map((m) => m.name);
      const started = Date.now();
      await client.apply([manifest(versions)]);
      const after = await rolledOut(client, md);
      return {
        seconds: (Date.now() - started) / 1000,
        machinesKept: after.machines.filter((m) => before.includes(m.name)).length,
        machinesMade: after.machines.filter((m) => !before.includes(m.name)).length,
      };
    };
    const inPlace = await timed({ inPlace: newer, replaced: older }, `${CLUSTER}-in-place`);
    const replaced = await timed({ inPlace: newer, replaced: newer }, `${CLUSTER}-replaced`);
    await client.deleteCluster('default', CLUSTER);
    await client.waitForDeletion('default', CLUSTER, () => undefined, 600_000);
    await writeResult(`in-place-update-${workers}`, {
      ...resultHeader(),
      workers,
      from: older,
      to: newer,
      strategy: 'RollingUpdate, maxSurge 1, maxUnavailable 0',
      inPlace,
      replaced,
    });
  } finally {
    letGo();
    await stop();
  }
}

runBenchmark(main);
