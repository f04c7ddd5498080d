import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeClient } from '../src/kube/kube-client';
import { LocalProvider } from '../providers/local/local-provider';
import { availableKubernetesVersions } from '../src/tools';
import { LocalClusterDriver } from '../test/fixtures/local-cluster';

/**
 * How long one local cluster with one control-plane machine and N worker machines takes to have every
 * Node Ready, and how much memory it holds then. `node dist/bench/local-workers.bench.js [N]`; the
 * result is written to bench/results/local-<N>-workers.json.
 */
async function rssOfProcessesMentioning(needle: string): Promise<{ count: number; rssMiB: number }> {
  let count = 0;
  let kib = 0;
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (!cmdline.replace(/\0/g, ' ').includes(needle)) continue;
    const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
    kib += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
    count++;
  }
  return { count, rssMiB: Math.round(kib / 1024) };
}

async function main(): Promise<void> {
  const workers = Number(process.argv[2] ?? 200);
  const home = await mkdtemp(join(tmpdir(), 'capt-bench-'));
  process.env.CAPT_HOME = home;
  const provider = new LocalProvider();
  const driver = new LocalClusterDriver(provider, 'default', 'bench', availableKubernetesVersions().at(-1)!);
  const started = Date.now();
  try {
    await driver.create();
    await driver.machine('bench-cp-0', 'init');
    const cp = await driver.bootstrapResult('bench-cp-0');
    if (cp.state !== 'succeeded') throw new Error(`control plane failed: ${JSON.stringify(cp)}`);
    const controlPlaneMs = Date.now() - started;
    const names = Array.from({ length: workers }, (_, i) => `bench-w-${i}`);
    for (let i = 0; i < names.length; i += 20)
      await Promise.all(names.slice(i, i + 20).map((n) => driver.machine(n, 'join')));
    const kube = new KubeClient(driver.kubeconfig());
    let ready = 0;
    while (ready < workers + 1) {
      await sleep(1000);
      ready = (await kube.listNodes()).filter((n) =>
        n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
      ).length;
      process.stdout.write(`\r${ready}/${workers + 1} nodes Ready`);
    }
    const allReadyMs = Date.now() - started;
    const ips = (await provider.describeMachine(driver.ref('bench-cp-0')))!.addresses[0]!;
    const [controlPlane, agent] = await Promise.all([
      rssOfProcessesMentioning(`${ips}`),
      rssOfProcessesMentioning('cluster-agent-main'),
    ]);
    const result = {
      date: new Date().toISOString(),
      workers,
      machineCores: 2,
      seconds: { controlPlaneReady: controlPlaneMs / 1000, allNodesReady: allReadyMs / 1000 },
      memoryMiB: {
        controlPlaneProcesses: controlPlane.rssMiB,
        clusterAgent: agent.rssMiB,
        total: controlPlane.rssMiB + agent.rssMiB,
      },
      processes: { controlPlane: controlPlane.count, clusterAgent: agent.count, perWorker: 0 },
    };
    console.log(`\n${JSON.stringify(result, null, 2)}`);
    await writeFile(
      join(__dirname, '../../bench/results', `local-${workers}-workers.json`),
      JSON.stringify(result, null, 2) + '\n',
    );
  } finally {
    await provider.deleteCluster('default', 'bench');
    await rm(home, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
