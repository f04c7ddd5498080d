import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { readFile } from 'node:fs/promises';
import { readJson, writeFileAtomic } from '../../src/util/files';
import { kubeconfigCredentials } from '../../src/pki/kubeconfig';
import { readMachineJsonSync } from './machine-files';
import { trustedRegistration } from './kubelet/trusted-registration';
import { serveWorkerJoins } from './kubeadm/join-service';
import { ensureKubeletBootstrapBindings } from './kubeadm/kubelet-tls-bootstrap';
import { KubeletApi } from './kubelet/kube-api';
import { kubeletConcurrency, SimulatedKubelets } from './kubelet/simulated-kubelets';
import { NodeWatch } from './kubelet/node-watch';
import {
  agentJoinPort,
  clusterKubeconfigPath,
  endpointPoolPath,
  kubeletConfigPath,
  machineDir,
  machineRecordPath,
  machinesDir,
  type KubeletRegistration,
  type LocalClusterRecord,
  type LocalMachineRecord,
} from './layout';
import { ApiserverLoadBalancer } from './load-balancer';

/**
 * One process per local cluster: its control-plane endpoint (load balancer), the simulated kubelets of
 * all its machines, and its workers' `kubeadm join`. It outlives capt workers and exits when the
 * cluster's record is deleted.
 */
function readJsonSync<T>(path: string): T | undefined {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as T;
  } catch {
    return undefined;
  }
}

interface PoweredMachine {
  record: LocalMachineRecord;
  registration: KubeletRegistration | undefined;
}

/**
 * The cluster's machines as their folders say. A machine.json is replaced (renamed over) on every change,
 * so it is read again only when its inode or mtime changed. Synchronous on purpose: at 1000 machines a
 * scan is ~5 ms of stats, where reading both files of every machine asynchronously, three scans a second,
 * cost most of a core.
 */
class MachineFolders {
  private readonly known = new Map<
    string,
    { version: string; record?: LocalMachineRecord; registration?: KubeletRegistration }
  >();

  constructor(private readonly dir: string) {}

  powered(): PoweredMachine[] {
    let names: string[];
    try {
      names = readdirSync(machinesDir(this.dir));
    } catch {
      names = [];
    }
    const present = new Set(names);
    for (const name of this.known.keys()) if (!present.has(name)) this.known.delete(name);
    const powered: PoweredMachine[] = [];
    for (const name of names) {
      const mdir = machineDir(this.dir, name);
      const stat = statSync(machineRecordPath(mdir), { throwIfNoEntry: false });
      if (!stat) {
        this.known.delete(name);
        continue;
      }
      const version = `${stat.ino}:${stat.mtimeMs}`;
      let entry = this.known.get(name);
      if (entry?.version !== version) {
        entry = { version, record: readJsonSync<LocalMachineRecord>(machineRecordPath(mdir)) };
        this.known.set(name, entry);
      }
      // kubeadm writes the registration once per machine life; until it has, look at every scan.
      if (entry.record)
        entry.registration ??= trustedRegistration(
          entry.record,
          readMachineJsonSync<KubeletRegistration>(kubeletConfigPath(mdir), entry.record.hostId),
          names,
        );
      if (entry.record?.power === 'on') powered.push({ record: entry.record, registration: entry.registration });
    }
    return powered;
  }
}

async function main(): Promise<void> {
  const dir = process.argv[2]!;
  const cluster = (await readJson<LocalClusterRecord>(join(dir, 'cluster.json')))!;
  const machines = new MachineFolders(dir);
  // The pool is written whenever it changes, one write at a time, so a leaving machine's detach can see it go.
  let published = '';
  let publishing = Promise.resolve();
  const publishPool = () =>
    (publishing = publishing.then(async () => {
      const pool = JSON.stringify(lb.pool());
      if (pool === published) return;
      published = pool;
      await writeFileAtomic(endpointPoolPath(dir), pool).catch((err: Error) => console.error(err.message));
    }));
  const lb = new ApiserverLoadBalancer(
    async () =>
      machines
        .powered()
        .filter((m) => m.record.role === 'control-plane' && !m.record.detached)
        .map((m) => `${m.record.ip}:6443`),
    () => void publishPool(),
  );
  await lb.listen(cluster.endpoint.host, cluster.endpoint.port);
  let api: KubeletApi | undefined;
  const kubeletApi = async () =>
    (api ??= new KubeletApi(await readFile(clusterKubeconfigPath(dir), 'utf8'), kubeletConcurrency));
  // The bindings of the kubelets' TLS bootstrap, once per agent (again after a failure).
  let bootstrapAllowed: Promise<void> | undefined;
  const allowBootstrap = () =>
    (bootstrapAllowed ??= kubeletApi()
      .then(ensureKubeletBootstrapBindings)
      .catch((err: unknown) => {
        bootstrapAllowed = undefined;
        throw err;
      }));
  // Worker joins are checked against the cluster CA of the kubeconfig the host wrote for this agent.
  const joins = await serveWorkerJoins(
    cluster.endpoint.host,
    agentJoinPort,
    async () => kubeconfigCredentials(await readFile(clusterKubeconfigPath(dir), 'utf8')).ca,
    allowBootstrap,
  );
  let kubelets: SimulatedKubelets | undefined;
  let nodes: NodeWatch | undefined;
  // Separate loops, so a kubelet report stuck on a slow apiserver never leaves the load balancer's backends stale.
  await Promise.all([
    everyWhileClusterExists(dir, 500, () => lb.checkBackends()),
    everyWhileClusterExists(dir, 1000, async () => {
      nodes ??= new NodeWatch(await kubeletApi());
      await nodes.once((node) => kubelets?.nodeSeen(node));
    }),
    everyWhileClusterExists(dir, 1000, async () => {
      kubelets ??= new SimulatedKubelets(await kubeletApi());
      // A machine whose kubelet was stopped on purpose goes silent, as a powered-off one does.
      await kubelets.sync(
        machines.powered().flatMap((m) => (m.registration && !m.record.kubeletStopped ? [m.registration] : [])),
      );
    }),
  ]);
  joins.close();
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
