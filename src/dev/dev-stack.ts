import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureCodecKeys } from '../codec/codec-keys';
import { defaultCodecPort } from '../codec/codec-server';
import { captHome } from '../config/capt-home';
import { devServerSearchAttributeArgs } from '../contract/search-attributes';
import { devServerDynamicConfigArgs } from './temporal-dynamic-config';
import {
  postgresTopologyDatabase,
  runningTemporalServer,
  startPostgresTopology,
  stopPostgresTopology,
} from './postgres-topology';
import {
  adminConf,
  managementApiStatus,
  startManagementApi,
  stopManagementApi,
  webhookClientCaFile,
} from './management-api';
import { tenantRolesApplied } from '../management-api/tenant-roles';
import { toolPaths } from '../tools';
import { reservePorts } from '../util/free-port';
import { isListening } from '../util/listening';
import { logTail, runningPid, startDetached, stopProcess } from '../util/processes';

/**
 * The embedded stack for `capt dev`: Temporal, a capt worker and the management API (Cluster API's kinds
 * served by a real kube-apiserver, src/management-api), in the background. Temporal is either the
 * dev server (SQLite under CAPT_HOME/dev, Web UI), or with `postgres` the production topology
 * (postgres-topology.ts). Stopping it stops neither clusters nor machines.
 */
export const devPersistences = ['sqlite', 'postgres'] as const;
export type DevPersistence = (typeof devPersistences)[number];

export interface DevStackOptions {
  port?: number;
  uiPort?: number;
  /** The codec server's, which the Web UI calls to show payloads decrypted. */
  codecPort?: number;
  /** Default: the one that runs, else sqlite. */
  persistence?: DevPersistence;
  /** The management API's kube-apiserver, on 127.0.0.1. */
  apiPort?: number;
  /** False: without the management API. */
  managementApi?: boolean;
  /** Where the worker serves its Prometheus metrics (docs/metrics.md), on 127.0.0.1. */
  metricsPort?: number;
  /** With `postgres`: Temporal server processes on the one database (postgres-topology.ts); default 1, else what runs. */
  temporalNodes?: number;
}

export const devDir = () => join(captHome(), 'dev');
const codecServerProcess = 'codec-server';
export const managementApiDir = () => join(devDir(), 'management-api');

const listening = (port: number) => isListening('127.0.0.1', port);

export interface DevStatus {
  /** What the running Temporal keeps its data in; undefined when none runs. */
  persistence?: DevPersistence;
  temporal?: number;
  /** With `postgres`: how many Temporal server processes run. */
  temporalNodes?: number;
  worker?: number;
  codecServer?: number;
  address: string;
  ui: string;
  codecEndpoint: string;
  /** The worker's Prometheus endpoint. */
  metrics: string;
  database: string;
  /** The management API's kube-apiserver pid and address. */
  managementApi?: number;
  managementApiServer?: string;
  /** `capt bridge` between the management API and Temporal. */
  bridge?: number;
}

/** The Prometheus exporters' usual port. */
const defaultMetricsPort = 9464;

/**
 * Ports from CAPT_DEV_PORT / CAPT_DEV_UI_PORT / CAPT_DEV_CODEC_PORT / CAPT_DEV_API_PORT / CAPT_DEV_METRICS_PORT,
 * else Temporal's usual 7233 and 8233, 8888, kubeadm's 6443 and Prometheus exporters' 9464.
 */
export function devPorts(): Required<
  Pick<DevStackOptions, 'port' | 'uiPort' | 'codecPort' | 'apiPort' | 'metricsPort'>
> {
  const { CAPT_DEV_PORT, CAPT_DEV_UI_PORT, CAPT_DEV_CODEC_PORT, CAPT_DEV_API_PORT, CAPT_DEV_METRICS_PORT } =
    process.env;
  return {
    port: Number(CAPT_DEV_PORT ?? 7233),
    uiPort: Number(CAPT_DEV_UI_PORT ?? 8233),
    codecPort: Number(CAPT_DEV_CODEC_PORT ?? defaultCodecPort),
    apiPort: Number(CAPT_DEV_API_PORT ?? 6443),
    metricsPort: Number(CAPT_DEV_METRICS_PORT ?? defaultMetricsPort),
  };
}

const codecEndpoint = (codecPort: number) => `http://127.0.0.1:${codecPort}`;

/** Which Temporal of the stack runs, with its pid (a server process's, when several run). */
async function runningTemporal(): Promise<{ persistence: DevPersistence; pid: number; nodes?: number } | undefined> {
  const devServer = await runningPid(devDir(), 'temporal');
  if (devServer) return { persistence: 'sqlite', pid: devServer };
  const server = await runningTemporalServer(devDir());
  return server && { persistence: 'postgres', ...server };
}

export async function devStatus(opts: DevStackOptions = devPorts()): Promise<DevStatus> {
  const temporal = await runningTemporal();
  const sqlite = join(devDir(), 'temporal.db');
  const api = await managementApiStatus(managementApiDir());
  return {
    managementApi: api.pid,
    managementApiServer: api.server,
    bridge: await runningPid(devDir(), 'bridge'),
    persistence: temporal?.persistence,
    temporal: temporal?.pid,
    ...(temporal?.nodes ? { temporalNodes: temporal.nodes } : {}),
    worker: await runningPid(devDir(), 'worker'),
    codecServer: await runningPid(devDir(), codecServerProcess),
    address: `127.0.0.1:${opts.port ?? 7233}`,
    ui: `http://127.0.0.1:${opts.uiPort ?? 8233}`,
    codecEndpoint: codecEndpoint(opts.codecPort ?? defaultCodecPort),
    metrics: `http://127.0.0.1:${opts.metricsPort ?? defaultMetricsPort}/metrics`,
    database: temporal?.persistence === 'postgres' ? ((await postgresTopologyDatabase(devDir())) ?? '') : sqlite,
  };
}

export async function devStart(
  opts: DevStackOptions = devPorts(),
  onStep: (line: string) => void = () => undefined,
): Promise<DevStatus> {
  const port = opts.port ?? 7233;
  const uiPort = opts.uiPort ?? 8233;
  const codec = codecEndpoint(opts.codecPort ?? defaultCodecPort);
  // The ports the stack's servers are told to use are free now, but the ports it picks for others must not take them.
  reservePorts([port, uiPort, opts.codecPort, opts.apiPort, opts.metricsPort].filter((p) => p !== undefined));
  const before = await devStatus(opts);
  const nothingRan = [before.temporal, before.managementApi, before.codecServer, before.worker, before.bridge].every(
    (pid) => pid === undefined,
  );
  const persistence = opts.persistence ?? before.persistence ?? (opts.temporalNodes ? 'postgres' : 'sqlite');
  if (opts.temporalNodes && persistence !== 'postgres')
    throw new Error(
      '--temporal-nodes runs Temporal server processes on PostgreSQL: add --persistence postgres (the dev server is one process)',
    );
  if (before.persistence && before.persistence !== persistence) {
    throw new Error(
      `the dev stack already runs with --persistence ${before.persistence}; run \`capt dev stop\` first to switch to ${persistence}`,
    );
  }
  const keyFile = await ensureCodecKeys();
  if (keyFile)
    onStep(
      `created the payload encryption key ${keyFile}: keep it, nothing capt sent through Temporal can be read without it`,
    );
  // The management API starts beside Temporal: neither waits for the other.
  const managementApi =
    opts.managementApi === false
      ? undefined
      : startManagementApi(managementApiDir(), opts.apiPort ?? 6443, onStep).then((r) => {
          onStep(`management API ready at ${r.server}: ${r.crds} CRDs Established (${r.applied} written)`);
          onStep(tenantRolesApplied(r.roles));
        });
  const temporal = (async () => {
    await startCodecServerProcess(opts.codecPort ?? defaultCodecPort, uiPort, onStep);
    if (persistence === 'postgres')
      await startPostgresTopology(devDir(), { port, uiPort, temporalNodes: opts.temporalNodes }, onStep, {
        codecEndpoint: codec,
      });
    else await startDevServer(port, uiPort, codec, onStep);
    await startCaptProcess('worker', port, onStep, { metricsPort: opts.metricsPort ?? defaultMetricsPort });
  })();
  // Both settle before an error is thrown, so nothing is left starting behind it; a start from nothing that
  // failed stops what it started (a stack that ran before is left as it was).
  try {
    const [api, rest] = await Promise.allSettled([managementApi, temporal]);
    for (const r of [rest, api]) if (r.status === 'rejected') throw r.reason;
    if (managementApi) await startCaptProcess('bridge', port, onStep);
  } catch (err) {
    if (nothingRan) await devStop().catch(() => undefined);
    throw err;
  }
  return devStatus(opts);
}

/** `temporal server start-dev` on 127.0.0.1:`port` with a SQLite file, capt's search attributes and dynamic config. */
export const devServerArgs = (port: number, database: string): string[] => [
  'server',
  'start-dev',
  '--ip',
  '127.0.0.1',
  '--port',
  String(port),
  '--db-filename',
  database,
  '--log-level',
  'warn',
  ...devServerSearchAttributeArgs(),
  ...devServerDynamicConfigArgs(),
];

/**
 * `capt codec-server` in the background, for the Web UI on `uiPort` (by either loopback name). It starts
 * first, so the UI has its endpoint from the start.
 */
async function startCodecServerProcess(
  codecPort: number,
  uiPort: number,
  onStep: (line: string) => void,
): Promise<void> {
  if (await runningPid(devDir(), codecServerProcess)) return;
  if (await listening(codecPort))
    throw new Error(`port ${codecPort} is already in use by another program; stop it or set CAPT_DEV_CODEC_PORT`);
  onStep(`starting the codec server on ${codecEndpoint(codecPort)} (the Web UI shows payloads decrypted through it)`);
  const origins = ['127.0.0.1', 'localhost'].flatMap((host) => ['--cors-origin', `http://${host}:${uiPort}`]);
  await startDetached({
    name: codecServerProcess,
    command: process.execPath,
    args: [join(__dirname, '../cli/main.js'), 'codec-server', '--port', String(codecPort), ...origins],
    stateDir: devDir(),
    env: { CAPT_HOME: captHome() },
  });
  for (let i = 0; !(await listening(codecPort)); i++) {
    if (i > 120 || !(await runningPid(devDir(), codecServerProcess)))
      throw new Error(`the codec server did not start:\n${await logTail(devDir(), codecServerProcess)}`);
    await sleep(250);
  }
}

async function startDevServer(
  port: number,
  uiPort: number,
  codec: string,
  onStep: (line: string) => void,
): Promise<void> {
  if (!(await runningPid(devDir(), 'temporal'))) {
    if (await listening(port))
      throw new Error(`port ${port} is already in use by another program; stop it or pass --port`);
    onStep(`starting the Temporal dev server on 127.0.0.1:${port} (Web UI on ${uiPort})`);
    await startDetached({
      name: 'temporal',
      command: toolPaths().temporal,
      stateDir: devDir(),
      args: [
        ...devServerArgs(port, join(devDir(), 'temporal.db')),
        '--ui-port',
        String(uiPort),
        '--ui-codec-endpoint',
        codec,
      ],
    });
  }
  for (let i = 0; !(await listening(port)); i++) {
    if (i > 120 || !(await runningPid(devDir(), 'temporal')))
      throw new Error(`the Temporal dev server did not start:\n${await logTail(devDir(), 'temporal')}`);
    await sleep(250);
  }
}

/** capt's own Node processes of the stack: each reaches Temporal on `port` and logs `ready` once it serves. */
const captProcesses = {
  worker: {
    what: 'a capt worker',
    script: '../worker/worker-main.js',
    args: (): string[] => [],
    // The embedded stack's one worker is the build that runs: a rebuilt capt takes over new workflows at once.
    env: { CAPT_WORKER_MAKE_CURRENT: '1' } as Record<string, string>,
    ready: 'capt worker ready',
  },
  // Between the management API and Temporal: Cluster API's objects applied there run here. Its admission
  // webhook takes any free port (the bridge registers the one it got) and answers only the apiserver, by the
  // client certificate the management API's start gave it.
  bridge: {
    what: 'the bridge between the management API and Temporal',
    script: '../cli/main.js',
    args: () => [
      'bridge',
      '--kubeconfig',
      adminConf(managementApiDir()),
      '--webhook-port',
      '0',
      '--webhook-client-ca',
      webhookClientCaFile(managementApiDir()),
    ],
    env: {} as Record<string, string>,
    ready: 'capt bridge ready',
  },
};

/**
 * Starts one of captProcesses in the background, unless it runs, and waits (up to a minute) until it is ready;
 * with `metricsPort`, it serves its Prometheus metrics there.
 */
async function startCaptProcess(
  name: keyof typeof captProcesses,
  port: number,
  onStep: (line: string) => void,
  { metricsPort }: { metricsPort?: number } = {},
): Promise<void> {
  const p = captProcesses[name];
  if (await runningPid(devDir(), name)) return;
  if (metricsPort !== undefined && (await listening(metricsPort)))
    throw new Error(
      `port ${metricsPort} is already in use by another program; stop it or set CAPT_DEV_METRICS_PORT (where the worker serves its metrics)`,
    );
  onStep(`starting ${p.what}`);
  const metrics: Record<string, string> =
    metricsPort === undefined ? {} : { CAPT_METRICS_ADDRESS: `127.0.0.1:${metricsPort}` };
  await startDetached({
    name,
    command: process.execPath,
    args: [join(__dirname, p.script), ...p.args()],
    stateDir: devDir(),
    env: { TEMPORAL_ADDRESS: `127.0.0.1:${port}`, CAPT_HOME: captHome(), ...p.env, ...metrics },
  });
  for (let i = 0; !(await readFile(join(devDir(), `${name}.log`), 'utf8').catch(() => '')).includes(p.ready); i++) {
    if (i > 240 || !(await runningPid(devDir(), name)))
      throw new Error(`${p.what} did not start:\n${await logTail(devDir(), name)}`);
    await sleep(250);
  }
}

/**
 * Stops the worker, the codec server, whichever Temporal runs and the management API; the SQLite file, the
 * PostgreSQL database, the management API's etcd and the keys stay.
 */
export async function devStop(): Promise<void> {
  // The two halves share nothing, so each one's shutdown time overlaps the other's; both finish before an error is thrown.
  const stopped = await Promise.allSettled([
    stopManagementApi(managementApiDir()),
    (async () => {
      await stopProcess(devDir(), 'bridge', 15_000);
      await stopProcess(devDir(), 'worker', 15_000);
      await stopProcess(devDir(), codecServerProcess, 15_000);
      await stopProcess(devDir(), 'temporal', 15_000);
      await stopPostgresTopology(devDir());
    })(),
  ]);
  for (const r of stopped) if (r.status === 'rejected') throw r.reason;
}
