import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { KubeConfig, Watch } from '@kubernetes/client-node';
import {
  managementKubeconfig,
  startManagementApi,
  stopManagementApi,
  webhookClientCaFile,
} from '../src/dev/management-api';
import { availableKubernetesVersions, kubectlFor } from '../src/tools';
import { freePort } from '../src/util/free-port';
import { apiserverRequestsByKind } from '../test/fixtures/apiserver-requests';
import { processesMentioning } from '../test/fixtures/leaks';

/** A file that gets the bridge's whole log (CAPT_LOG_LEVEL=debug adds each pass's machine counts and time). */
const bridgeLogFile = process.env.CAPT_BENCH_BRIDGE_LOG;

type MachineEvent = { metadata: { name: string }; status?: { phase?: string } };

export type ManagementPart =
  'managementApi' | 'managementApiserver' | 'managementEtcd' | 'managementControllerManager' | 'bridge';
/**
 * The management API as a bench's door to capt: a real kube-apiserver, etcd and controller-manager, one
 * `capt bridge` (with its admission webhook, as `capt dev start` runs it), kubectl for the operations, a watch
 * of the Machine objects for the status lag, and the apiserver's own request counter.
 */
export class ManagementApiDoor {
  private bridge?: ChildProcess;
  private bridgeLog = '';
  private watch?: AbortController;
  private stopping = false;
  /** When this process first saw each Machine object Running (ms since the epoch). */
  readonly seenRunning = new Map<string, number>();

  private constructor(
    readonly dir: string,
    readonly kubeconfig: string,
  ) {}

  static async start(temporalAddress: string, captHome: string): Promise<ManagementApiDoor> {
    const dir = await mkdtemp(join(tmpdir(), 'capt-bench-api-'));
    process.env.CAPT_HOME = captHome;
    await startManagementApi(dir, await freePort('127.0.0.1'), () => undefined);
    const kubeconfig = join(dir, 'admin.kubeconfig');
    await writeFile(kubeconfig, await managementKubeconfig(dir), { mode: 0o600 });
    const door = new ManagementApiDoor(dir, kubeconfig);
    const cli = join(__dirname, '../src/cli/main.js');
    const args = ['bridge', '--kubeconfig', kubeconfig, '--webhook-port', '0'];
    door.bridge = spawn(process.execPath, [cli, ...args, '--webhook-client-ca', webhookClientCaFile(dir)], {
      env: { ...process.env, TEMPORAL_ADDRESS: temporalAddress, CAPT_HOME: captHome },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (c: Buffer) => {
      if (bridgeLogFile) appendFileSync(bridgeLogFile, c);
      door.bridgeLog = (door.bridgeLog + c.toString()).slice(-20_000);
    };
    door.bridge.stdout!.on('data', keep);
    door.bridge.stderr!.on('data', keep);
    try {
      for (const deadline = Date.now() + 60_000; !door.bridgeLog.includes('capt bridge ready');) {
        if (Date.now() > deadline || door.bridge.exitCode !== null)
          throw new Error(`capt bridge did not get ready:\n${door.bridgeLog}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      await door.watchMachines();
    } catch (err) {
      // What it started goes with it: the bench's own stop never hears of a door that did not open.
      await door.stop();
      throw err;
    }
    return door;
  }

  /** The last lines the bridge logged, for a failure's message. */
  log(): string {
    return this.bridgeLog.slice(-4000);
  }

  async kubectl(...args: string[]): Promise<string> {
    const kubectl = kubectlFor(availableKubernetesVersions().at(-1)!);
    return (await promisify(execFile)(kubectl, ['--kubeconfig', this.kubeconfig, ...args], { maxBuffer: 1 << 26 }))
      .stdout;
  }

  async object<T>(kind: string, name: string): Promise<T> {
    return JSON.parse(await this.kubectl('get', kind, name, '-o', 'json')) as T;
  }

  /**
   * Every request the management apiserver has answered since it started (apiserver_request_total), by verb and
   * resource (`PATCH machines/status`).
   */
  async requests(): Promise<Record<string, number>> {
    return apiserverRequestsByKind(await this.kubectl('get', '--raw', '/metrics'));
  }

  /**
   * The management API's processes and the bridge: what the door costs beside the rest of the stack. The
   * management API's apiserver, etcd and controller-manager are counted apart as well as together.
   */
  async pids(): Promise<Record<ManagementPart, number[]>> {
    // The bridge names the management API's kubeconfig on its command line: it is counted apart, not here.
    const mine = (await processesMentioning([this.dir])).filter((p) => p.pid !== this.bridge?.pid);
    const running = (program: string) => mine.filter((p) => p.cmdline.includes(`${program} `)).map((p) => p.pid);
    return {
      managementApi: mine.map((p) => p.pid),
      managementApiserver: running('kube-apiserver'),
      managementEtcd: running('/etcd'),
      managementControllerManager: running('kube-controller-manager'),
      bridge: this.bridge?.pid ? [this.bridge.pid] : [],
    };
  }

  /** Watches the Machine objects (a list, then the changes), noting when each is first seen Running. */
  private async watchMachines(): Promise<void> {
    const kc = new KubeConfig();
    kc.loadFromFile(this.kubeconfig);
    this.watch = await new Watch(kc).watch(
      '/apis/cluster.x-k8s.io/v1beta2/machines',
      {},
      (type: string, o: MachineEvent) => {
        if (type !== 'DELETED' && o.status?.phase === 'Running' && !this.seenRunning.has(o.metadata.name))
          this.seenRunning.set(o.metadata.name, Date.now());
      },
      // A watch the apiserver ends (its timeout) is opened again.
      () => void (this.stopping || this.watchMachines().catch(() => undefined)),
    );
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.watch?.abort();
    this.bridge?.kill('SIGTERM');
    await new Promise((r) => (this.bridge?.exitCode !== null ? r(undefined) : this.bridge.once('exit', r)));
    await stopManagementApi(this.dir);
    await rm(this.dir, { recursive: true, force: true });
  }
}
