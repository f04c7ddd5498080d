import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { temporal } from '@temporalio/proto';
import { localRoot } from '../providers/local/layout';
import { loadManifests } from '../src/api/load-manifests';
import type { ClusterModel } from '../src/api/model';
import { CaptClient } from '../src/client/capt-client';
import { clusterWorkflowId } from '../src/contract/workflow-ids';
import { measureHistories } from '../test/fixtures/history-guard';
import { processesMentioning } from '../test/fixtures/leaks';
import { MachineHarness } from '../test/fixtures/machine-harness';
import { resultHeader, runBenchmark, writeResult } from './bench-result';

/**
 * A fleet applied at once: N clusters of 1 control plane + 2 workers (each control plane is a real etcd
 * and apiserver, about half a GiB, so 20 is what this machine holds). `node dist/bench/capt-fleet.bench.js [N]`
 * writes bench/results/capt-fleet-<N>.json.
 */
const count = Number(process.argv[2] ?? 20);
const root = join(__dirname, '../..');
const E = temporal.api.enums.v1.EventType;

const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil((p / 100) * values.length) - 1)]!;
const ms = (t: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
  Number(t?.seconds ?? 0) * 1000 + (t?.nanos ?? 0) / 1e6;

async function main(): Promise<void> {
  const h = new MachineHarness(undefined, { guard: false });
  await h.start();
  const client = await CaptClient.connect({ address: h.env.address });
  const text = await readFile(join(root, 'examples/quickstart.yaml'), 'utf8');
  const names = Array.from({ length: count }, (_, i) => `fleet-${i}`);
  const result: Record<string, unknown> = {
    ...resultHeader(),
    clusters: count,
  };
  try {
    const started = Date.now();
    const perCluster = await Promise.all(
      names.map(async (name) => {
        const [model] = loadManifests([{ file: 'quickstart.yaml', text }], {
          CLUSTER_NAME: name,
          CONTROL_PLANE_MACHINE_COUNT: '1',
          WORKER_MACHINE_COUNT: '2',
        }) as [ClusterModel];
        const applied = Date.now();
        await client.apply([model]);
        const status = await client.waitForCluster('default', name, () => undefined, 1_800_000);
        if (status.phase !== 'Provisioned') throw new Error(`${name}: ${status.phase}`);
        return (Date.now() - applied) / 1000;
      }),
    );
    const allRunning = (Date.now() - started) / 1000;
    // Apply -> first activity started, read from each cluster workflow's history.
    const latencies: number[] = [];
    for (const name of names) {
      const history = await h.env.client.workflow.getHandle(clusterWorkflowId('default', name)).fetchHistory();
      const start = history.events!.find((e) => e.eventType === E.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED)!;
      const firstActivity = history.events!.find((e) => e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_STARTED)!;
      latencies.push(ms(firstActivity.eventTime) - ms(start.eventTime));
    }
    const deleteStarted = Date.now();
    await Promise.all(
      names.map(async (name) => {
        await client.deleteCluster('default', name);
        await client.waitForDeletion('default', name, () => undefined, 1_800_000);
      }),
    );
    const histories = await measureHistories(h.env.client);
    Object.assign(result, {
      seconds: {
        allRunning,
        clusterP50: percentile(perCluster, 50),
        clusterP95: percentile(perCluster, 95),
        deleteAll: (Date.now() - deleteStarted) / 1000,
      },
      applyToFirstActivityMs: { p50: percentile(latencies, 50), p95: percentile(latencies, 95) },
      histories: {
        runs: histories.runs,
        maxEvents: histories.maxHistoryEvents,
        maxBytes: histories.maxHistoryBytes,
        maxPayloadBytes: histories.maxPayloadBytes,
        failedWorkflowTasks: histories.failedWorkflowTasks.length,
        failedWorkflowTaskCauses: histories.failedWorkflowTasks.slice(0, 10),
      },
      leftover: {
        clusterDirectories: (await readdir(join(localRoot(), 'default')).catch(() => [])).length,
        processes: (await processesMentioning([join(h.home, 'local')])).length,
      },
    });
  } finally {
    await client.close();
    await h.stop();
  }
  await writeResult(`capt-fleet-${count}`, result);
}

runBenchmark(main);
