import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeClient } from '../../activities/kube/kube-client';
import { getSecret } from '../../src/secrets/secret-store';
import { SimulatedKubelets } from './kubelet/simulated-kubelets';
import {
  kubeletConfigPath, machineDir, machinesDir, type KubeletRegistration, type LocalClusterRecord, type LocalMachineRecord,
} from './layout';
import { ApiserverLoadBalancer } from './load-balancer';

/**
 * One process per local cluster: its control-plane endpoint (load balancer) and the simulated kubelets of
 * all its machines. It outlives capt workers and exits when the cluster's record is deleted.
 */
async function readJson<T>(path: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as T;
  } catch {
    return undefined;
  }
}

interface PoweredMachine {
  record: LocalMachineRecord;
  registration: KubeletRegistration | undefined;
}

async function poweredMachines(dir: string): Promise<PoweredMachine[]> {
  const names = await readdir(machinesDir(dir)).catch(() => [] as string[]);
  const machines = await Promise.all(
    names.map(async (name) => ({
      record: await readJson<LocalMachineRecord>(join(machineDir(dir, name), 'machine.json')),
      registration: await readJson<KubeletRegistration>(kubeletConfigPath(machineDir(dir, name))),
    })),
  );
  return machines.filter((m): m is PoweredMachine => m.record?.power === 'on');
}

async function main(): Promise<void> {
  const dir = process.argv[2]!;
  const cluster = (await readJson<LocalClusterRecord>(join(dir, 'cluster.json')))!;
  const lb = new ApiserverLoadBalancer(async () =>
    (await poweredMachines(dir)).filter((m) => m.record.role === 'control-plane' && !m.record.detached).map((m) => `${m.record.ip}:6443`),
  );
  await lb.listen(cluster.endpoint.host, cluster.endpoint.port);
  let kubelets: SimulatedKubelets | undefined;
  // Two loops, so a kubelet report stuck on a slow apiserver never leaves the load balancer's backends stale.
  await Promise.all([
    everyWhileClusterExists(dir, 500, () => lb.checkBackends()),
    everyWhileClusterExists(dir, 1000, async () => {
      kubelets ??= new SimulatedKubelets(new KubeClient(await getSecret(cluster.adminKubeconfig)));
      const registrations = (await poweredMachines(dir)).flatMap((m) => (m.registration ? [m.registration] : []));
      await kubelets.sync(registrations);
    }),
  ]);
  await lb.close();
}

/** Runs `work` every `intervalMs` until the cluster's record is gone; errors are logged once per distinct message. */
async function everyWhileClusterExists(dir: string, intervalMs: number, work: () => Promise<void>): Promise<void> {
  let lastError = '';
  while (await readJson(join(dir, 'cluster.json'))) {
    try {
      await work();
      lastError = '';
    } catch (err) {
      // The apiserver is often not up yet; say so once per distinct error, not every second.
      const message = (err as Error).message;
      if (message !== lastError) console.error(new Date().toISOString(), message);
      lastError = message;
    }
    await sleep(intervalMs);
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
