import { createHash, randomBytes } from 'node:crypto';
import { access, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { captHome } from '../config/capt-home';
import { setTimeout as sleep } from 'node:timers/promises';
import { topologyToolPaths } from '../tools';
import { freePort, freePortBetween } from '../util/free-port';
import { isListening } from '../util/listening';
import { logTail, runningPid, startDetached, stopProcess } from '../util/processes';
import { coLocatedGoMaxProcs } from './co-located-go-procs';
import { initPostgres, postgresProcess, startPostgres, stopPostgres, type PostgresServer } from './postgres-server';
import { registerCaptNamespace } from './temporal-namespace';
import { createTemporalSchema, updateTemporalSchema } from './temporal-schema';
import {
  maxServicePort,
  temporalDynamicConfigYaml,
  temporalServerConfigYaml,
  temporalServices,
  type ServicePorts,
} from './temporal-server-config';
import { temporalUiConfigYaml } from './temporal-ui-config';

/**
 * The production topology on one host, without Docker: PostgreSQL (Debian's), Temporal's server and its
 * Web UI server (built by setup), the schema made by Temporal's schema tool, and the `default` namespace
 * with capt's search attributes. Every process is detached and recorded in `stateDir`, so another capt
 * process finds, restarts or stops them; stopping keeps the database.
 */
export interface TopologyPorts {
  /** The frontend's gRPC port (what TEMPORAL_ADDRESS names): the one node's, or the frontend proxy's. */
  port: number;
  uiPort: number;
  /**
   * Temporal server processes, each running every service, on the one database (1 by default, else what runs):
   * with more than one, a frontend proxy on `port` forwards to theirs.
   */
  temporalNodes?: number;
}

/** Process names in `stateDir` (pid records and logs): node 1 keeps the single server's name. */
export const temporalServerProcess = 'temporal-server';
export const temporalNodeProcess = (node: number) =>
  node === 1 ? temporalServerProcess : `${temporalServerProcess}-${node}`;
export const temporalUiProcess = 'temporal-ui';
export const frontendProxyProcess = 'temporal-frontend-proxy';
/** Enough nodes to lose one and keep a majority; more would crowd a small host. */
export const maxTemporalNodes = 5;

const databaseUser = 'temporal';

interface TopologyState {
  /** PostgreSQL's own directory (postgresDataHome), its port and superuser password. */
  postgres: { home: string; port: number; password: string };
  /** Set once both databases have their schema; until then a start creates the database cluster anew. */
  schemaReady: boolean;
  /** Node 1's services' ports (its frontend's gRPC one is `port` when it is the only node), kept across restarts as a host's would be. */
  ports: ServicePorts;
  /** How many server processes run; absent: 1. */
  nodes?: number;
  /** Nodes 2 and on: their services' ports. */
  moreNodes?: ServicePorts[];
}

const statePath = (stateDir: string) => join(stateDir, 'topology.json');

async function readState(stateDir: string): Promise<TopologyState | undefined> {
  const text = await readFile(statePath(stateDir), 'utf8').catch(() => undefined);
  return text === undefined ? undefined : (JSON.parse(text) as TopologyState);
}

/** Holds the database password: readable by this user only, as the server's config file. */
const writePrivate = (path: string, text: string) => writeFile(path, text, { mode: 0o600 });
const saveState = (stateDir: string, state: TopologyState) =>
  writePrivate(statePath(stateDir), JSON.stringify(state, null, 2));

/**
 * Where PostgreSQL keeps the topology's data: CAPT_POSTGRES_DIR, else a directory that survives a reboot (never
 * the temporary directory, which a reboot or the system's cleaning may empty under running clusters). A root
 * capt runs PostgreSQL as `postgres`, who cannot enter root's home, so its default is under /var/lib/capt,
 * named after the capt home it serves; otherwise it is `$CAPT_HOME/postgres`.
 */
export function postgresDataHome(): string {
  if (process.env.CAPT_POSTGRES_DIR) return resolve(process.env.CAPT_POSTGRES_DIR);
  if (process.getuid?.() !== 0) return join(captHome(), 'postgres');
  return join(
    '/var/lib/capt',
    `postgres-${createHash('sha256').update(resolve(captHome())).digest('hex').slice(0, 12)}`,
  );
}

/** Ports for the server's services, free when chosen (the schema keeps them in a smallint, so below 32768). */
async function servicePorts(): Promise<ServicePorts> {
  const ports = {} as ServicePorts;
  const servicePort = () => freePortBetween(10_000, maxServicePort);
  for (const service of temporalServices)
    ports[service] = { grpc: await servicePort(), membership: await servicePort() };
  return ports;
}

async function newState(home: string): Promise<TopologyState> {
  const ports = await servicePorts();
  // This capt home has no record of a database there: it belongs to another topology, or to one whose records were lost.
  if (
    await access(join(home, 'data', 'PG_VERSION')).then(
      () => true,
      () => false,
    )
  ) {
    throw new Error(
      `${home} already holds a PostgreSQL database that this capt home (${captHome()}) has no record of; remove it, or point CAPT_POSTGRES_DIR elsewhere`,
    );
  }
  // Its parents stay open to PostgreSQL's user; the directory itself becomes that user's alone (initPostgres).
  await mkdir(dirname(home), { recursive: true, mode: 0o755 });
  await mkdir(home, { recursive: true, mode: 0o700 });
  return {
    postgres: { home, port: await freePort(), password: randomBytes(24).toString('base64url') },
    schemaReady: false,
    ports,
  };
}

async function waitListening(stateDir: string, name: string, port: number, what: string): Promise<void> {
  for (let i = 0; !(await isListening('127.0.0.1', port)); i++) {
    if (i > 240 || !(await runningPid(stateDir, name)))
      throw new Error(`${what} did not start on 127.0.0.1:${port}:\n${await logTail(stateDir, name)}`);
    await sleep(250);
  }
}

async function refuseBusyPort(port: number, flag: string): Promise<void> {
  if (await isListening('127.0.0.1', port))
    throw new Error(`port ${port} is already in use by another program; stop it or choose another port (${flag})`);
}

/** Get-or-start of every part, in dependency order; returns once the namespace is usable and the UI answers. */
export async function startPostgresTopology(
  stateDir: string,
  ports: TopologyPorts,
  onStep: (line: string) => void = () => undefined,
  opts: { codecEndpoint?: string; dataHome?: string } = {},
): Promise<void> {
  if (ports.port > maxServicePort) {
    throw new Error(
      `port ${ports.port}: the Temporal server's PostgreSQL schema keeps service ports in a smallint; choose a port up to ${maxServicePort} (CAPT_DEV_PORT)`,
    );
  }
  const tools = topologyToolPaths();
  await mkdir(stateDir, { recursive: true });
  const state = (await readState(stateDir)) ?? (await newState(opts.dataHome ?? postgresDataHome()));
  const pg: PostgresServer = {
    bin: tools.postgres,
    home: state.postgres.home,
    port: state.postgres.port,
    user: databaseUser,
    password: state.postgres.password,
    stateDir,
  };
  const sql = { port: pg.port, user: pg.user, password: pg.password };
  if (!state.schemaReady) {
    // A set-up that stopped half-way (killed, say) is started over from an empty cluster.
    await stopPostgres(stateDir);
    await rm(join(pg.home, 'data'), { recursive: true, force: true });
  }
  await saveState(stateDir, state);
  if (!(await runningPid(stateDir, postgresProcess)))
    onStep(`starting PostgreSQL on 127.0.0.1:${pg.port} (data in ${pg.home})`);
  await initPostgres(pg);
  await startPostgres(pg);

  const nodes = ports.temporalNodes ?? state.nodes ?? 1;
  if (!Number.isInteger(nodes) || nodes < 1 || nodes > maxTemporalNodes)
    throw new Error(`--temporal-nodes ${nodes}: run 1 to ${maxTemporalNodes} Temporal server processes`);
  const running = await runningNodes(stateDir, state);
  if (running.length && nodes !== (state.nodes ?? 1))
    throw new Error(
      `Temporal runs as ${state.nodes ?? 1} server process(es); run \`capt dev stop\` first to run ${nodes} (--temporal-nodes)`,
    );
  const serverRunning = running.length > 0;
  if (!state.schemaReady) {
    onStep("creating Temporal's databases (temporal, temporal_visibility) with the schema tool");
    await createTemporalSchema(tools.temporalSqlTool, sql);
    state.schemaReady = true;
    await saveState(stateDir, state);
  } else if (!serverRunning) {
    await updateTemporalSchema(tools.temporalSqlTool, sql);
  }
  state.nodes = nodes;
  while ((state.moreNodes ??= []).length < nodes - 1) state.moreNodes.push(await servicePorts());
  await saveState(stateDir, state);

  const address = `127.0.0.1:${ports.port}`;
  if (nodes === 1) {
    if (!serverRunning) await refuseBusyPort(ports.port, 'CAPT_DEV_PORT');
    await startNode(stateDir, tools.temporalServer, state, 1, sql, ports.port, onStep);
  } else {
    for (let node = 1; node <= nodes; node++)
      await startNode(stateDir, tools.temporalServer, state, node, sql, undefined, onStep);
    if (!(await runningPid(stateDir, frontendProxyProcess))) {
      await refuseBusyPort(ports.port, 'CAPT_DEV_PORT');
      const frontends = nodePorts(state).map((p) => `127.0.0.1:${p.frontend.grpc}`);
      onStep(`starting the frontend proxy on ${address} to the ${nodes} nodes' frontends (${frontends.join(', ')})`);
      await startDetached({
        name: frontendProxyProcess,
        command: process.execPath,
        args: [join(__dirname, 'frontend-proxy-main.js'), address, ...frontends],
        stateDir,
      });
    }
    await waitListening(stateDir, frontendProxyProcess, ports.port, 'the frontend proxy');
  }
  await registerCaptNamespace(address).catch(async (err: unknown) => {
    // A server that exits after it began listening says why in its log.
    if ((await runningNodes(stateDir, state)).length === nodes) throw err;
    throw new Error(`the Temporal server exited while starting:\n${await logTail(stateDir, temporalServerProcess)}`);
  });

  if (!(await runningPid(stateDir, temporalUiProcess))) {
    await refuseBusyPort(ports.uiPort, 'CAPT_DEV_UI_PORT');
    onStep(`starting the Temporal Web UI on http://127.0.0.1:${ports.uiPort}`);
    const uiDir = join(stateDir, 'temporal-ui');
    await mkdir(uiDir, { recursive: true });
    await writeFile(
      join(uiDir, 'ui.yaml'),
      temporalUiConfigYaml({ port: ports.uiPort, temporalAddress: address, codecEndpoint: opts.codecEndpoint }),
    );
    await startDetached({
      name: temporalUiProcess,
      command: tools.temporalUiServer,
      args: ['--root', uiDir, '--config', '.', '--env', 'ui', 'start'],
      stateDir,
    });
  }
  await waitListening(stateDir, temporalUiProcess, ports.uiPort, 'the Temporal Web UI');
}

/** Every node's service ports, node 1 first. */
const nodePorts = (state: TopologyState): ServicePorts[] =>
  [state.ports, ...(state.moreNodes ?? [])].slice(0, state.nodes ?? 1);

/** Every node ever given ports, by number: a process may run for any of them. */
const knownNodes = (state: TopologyState | undefined) =>
  Array.from({ length: 1 + (state?.moreNodes?.length ?? 0) }, (_, i) => i + 1);

/** The pids of the server processes that run, node 1's first. */
async function runningNodes(stateDir: string, state: TopologyState | undefined): Promise<number[]> {
  const pids = await Promise.all(knownNodes(state).map((node) => runningPid(stateDir, temporalNodeProcess(node))));
  return pids.filter((pid): pid is number => pid !== undefined);
}

/**
 * Get-or-start of one server process with every service; `frontendPort` overrides its frontend's (the single
 * node's is CAPT_DEV_PORT). A service port taken by another program between its choice and the bind is chosen again.
 */
async function startNode(
  stateDir: string,
  command: string,
  state: TopologyState,
  node: number,
  sql: { port: number; user: string; password: string },
  frontendPort: number | undefined,
  onStep: (line: string) => void,
): Promise<void> {
  const name = temporalNodeProcess(node);
  const portsOf = () => {
    const own = nodePorts(state)[node - 1]!;
    return frontendPort ? { ...own, frontend: { ...own.frontend, grpc: frontendPort } } : own;
  };
  if (!(await runningPid(stateDir, name))) {
    onStep(
      `starting the Temporal server${(state.nodes ?? 1) > 1 ? ` (node ${node})` : ''} on 127.0.0.1:${portsOf().frontend.grpc}`,
    );
    for (let attempt = 1; ; attempt++) {
      const configFile = join(stateDir, `${name}.yaml`);
      const dynamicConfigFile = join(stateDir, 'temporal-dynamic-config.yaml');
      await writePrivate(dynamicConfigFile, temporalDynamicConfigYaml());
      await writePrivate(configFile, temporalServerConfigYaml({ ports: portsOf(), postgres: sql, dynamicConfigFile }));
      const goMaxProcs = coLocatedGoMaxProcs(availableParallelism(), state.nodes ?? 1);
      await startDetached({
        name,
        command,
        args: ['--config-file', configFile, '--allow-no-auth', 'start'],
        stateDir,
        ...(goMaxProcs ? { env: { GOMAXPROCS: goMaxProcs } } : {}),
      });
      const failed = await waitListening(stateDir, name, portsOf().frontend.grpc, 'the Temporal server').then(
        () => undefined,
        (err: Error) => err,
      );
      if (!failed) break;
      const taken = /listen tcp 127\.0\.0\.1:(\d+): bind: address already in use/.exec(failed.message)?.[1];
      if (!taken || Number(taken) === frontendPort || attempt === 3) throw failed;
      onStep(`port ${taken}, one of the Temporal server's services, was taken meanwhile; choosing others`);
      if (node === 1) state.ports = await servicePorts();
      else state.moreNodes![node - 2] = await servicePorts();
      await saveState(stateDir, state);
    }
  }
  await waitListening(stateDir, name, portsOf().frontend.grpc, 'the Temporal server');
}

/** Stops the UI, the proxy, the servers, then PostgreSQL (its sessions must end first); the database stays for the next start. */
export async function stopPostgresTopology(stateDir: string): Promise<void> {
  await stopProcess(stateDir, temporalUiProcess, 15_000);
  await stopProcess(stateDir, frontendProxyProcess, 15_000);
  const nodes = knownNodes(await readState(stateDir));
  await Promise.all(nodes.map((node) => stopProcess(stateDir, temporalNodeProcess(node), 15_000)));
  await stopPostgres(stateDir);
}

/** The pid of a server process of the topology that runs (node 1's if it does), for `capt dev status`. */
export async function runningTemporalServer(stateDir: string): Promise<{ pid: number; nodes: number } | undefined> {
  const running = await runningNodes(stateDir, await readState(stateDir));
  return running.length ? { pid: running[0]!, nodes: running.length } : undefined;
}

/** Stops everything and deletes the database and the topology's records: the next start begins empty. */
export async function deletePostgresTopology(stateDir: string): Promise<void> {
  await stopPostgresTopology(stateDir);
  const state = await readState(stateDir);
  if (state) await rm(state.postgres.home, { recursive: true, force: true });
  await rm(statePath(stateDir), { force: true });
}

/** Where the database lives, for `capt dev status`; undefined before the first start. */
export async function postgresTopologyDatabase(stateDir: string): Promise<string | undefined> {
  const state = await readState(stateDir);
  return state && `PostgreSQL 127.0.0.1:${state.postgres.port}, data in ${join(state.postgres.home, 'data')}`;
}
