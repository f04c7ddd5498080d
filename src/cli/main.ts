#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadManifests } from '../api/load-manifests';
import { ManifestError } from '../api/manifest-error';
import { manifestVariables, substituteVariables } from '../api/variables';
import { CaptClient, failedMachines, RejectedError, type OwnerKind } from '../client/capt-client';
import { acceptPlaintextEnv, AesGcmCodec } from '../codec/aes-gcm-codec';
import {
  codecKeyFile,
  codecKeyLine,
  createCodecKeyFile,
  isCodecKeyId,
  loadCodecKeys,
  newCodecKey,
} from '../codec/codec-keys';
import { defaultCodecPort, startCodecServer } from '../codec/codec-server';
import { codecTokenFile, ensureCodecToken } from '../codec/codec-token';
import { devPersistences, devPorts, devStart, devStatus, devStop, type DevPersistence } from '../dev/dev-stack';
import { changeDevMachine, type MachineFaultOutcome } from '../dev/dev-machine-faults';
import {
  controlPlaneComponents,
  isControlPlaneComponent,
  nodeMonitorGraceSeconds,
} from '../../providers/local/control-plane-components';
import { MachineFaultError, type MachineFault } from '../../providers/local/machine-faults';
import { availableKubernetesVersions, kubectlFor, toolPaths } from '../tools';
import {
  age,
  clustersTable,
  describeTree,
  formatOutput,
  listedMachines,
  machinesTable,
  ownersTable,
  table,
} from './render';
import { appliedText } from './apply-text';
import { healthTable, healthText } from './health-text';
import { controlPlaneMachineCount } from './flavors';
import { readSources, UsageError } from './read-sources';
import { terminalSafe } from '../util/terminal-text';
import { rolloutStatusText } from './rollout-status';
import { repairText } from './repair-text';
import type { ClusterView } from '../contract/cluster';
import { upgradeWorkers, workerBuilds } from '../client/worker-upgrade';
import { upgradeText, workerBuildsText } from './worker-builds-text';

/** Options as data: one place for names, types, defaults and help. */
const options = {
  filename: { type: 'string', short: 'f', multiple: true, help: 'manifest file, folder or - for stdin' },
  var: { type: 'string', multiple: true, help: 'NAME=value for ${NAME} in manifests (overrides the environment)' },
  wait: { type: 'boolean', help: 'wait until the operation is done' },
  'dry-run': {
    type: 'boolean',
    help: 'apply: print what would change and which machines would be replaced; repair: what would be rebuilt; change nothing (--dry-run=server alike)',
  },
  timeout: { type: 'string', default: '15m', help: 'how long --wait waits (e.g. 90s, 15m)' },
  namespace: { type: 'string', short: 'n', default: 'default', help: 'namespace' },
  'all-namespaces': { type: 'boolean', short: 'A', help: 'every namespace' },
  output: { type: 'string', short: 'o', default: 'table', help: 'table | wide | json | yaml' },
  'show-conditions': { type: 'string', help: 'all: every condition in describe' },
  replicas: { type: 'string', help: 'replica count for scale' },
  'to-revision': { type: 'string', help: 'rollout undo: the revision to return to (default: the previous one)' },
  revision: { type: 'string', help: 'rollout history: show one revision whole' },
  watch: { type: 'boolean', short: 'w', help: 'rollout status: follow until the rollout completes' },
  'kubernetes-version': { type: 'string', help: 'generate: Kubernetes version' },
  'control-plane-machine-count': {
    type: 'string',
    help: 'generate: control-plane machines (default: 1 for the development flavor, 3 for ha)',
  },
  'worker-machine-count': { type: 'string', default: '2', help: 'generate: worker machines' },
  flavor: { type: 'string', help: 'generate: development (1 control-plane machine, the default) or ha (3)' },
  kubelet: {
    type: 'boolean',
    help: "dev break|repair machine: the machine's simulated kubelet (its Node turns NotReady)",
  },
  component: {
    type: 'string',
    help: `dev break|repair machine: one control-plane component (${controlPlaneComponents.join(', ')})`,
  },
  all: { type: 'boolean', help: 'dev break|repair machine: the whole machine (every process; the default of repair)' },
  persistence: {
    type: 'string',
    help: 'dev start: sqlite (the Temporal dev server; the default) or postgres (the production topology: Temporal server, Web UI server, PostgreSQL); default: what runs',
  },
  ramp: {
    type: 'string',
    help: 'upgrade workers: send this percentage (0-100) of new workflows to the new build instead of all',
  },
  serve: {
    type: 'string',
    help: 'worker: what it serves: core (the capt-core and capt-owners queues) and/or a provider (local), comma-separated; default all (CAPT_WORKER_SERVES)',
  },
  id: { type: 'string', help: "codec key new: the key id (default: today's date and a random suffix)" },
  print: {
    type: 'boolean',
    help: 'codec key new: print the key as ID:BASE64 and write nothing (to add to a key file or CAPT_CODEC_KEYS)',
  },
  port: { type: 'string', help: `codec-server: the port (default ${defaultCodecPort})` },
  listen: { type: 'string', help: 'codec-server: the address to listen on (default 127.0.0.1, this host only)' },
  'cors-origin': {
    type: 'string',
    multiple: true,
    help: 'codec-server: a Web UI origin its browser may call from, e.g. http://127.0.0.1:8233',
  },
  'tls-cert': { type: 'string', help: 'client certificate for mutual TLS to Temporal (TEMPORAL_TLS_CERT)' },
  'tls-key': { type: 'string', help: 'client key for mutual TLS to Temporal (TEMPORAL_TLS_KEY)' },
  'tls-ca': { type: 'string', help: 'CA certificate of the Temporal server (TEMPORAL_TLS_CA)' },
  verbose: { type: 'boolean', short: 'v', help: 'show stacks on errors' },
  help: { type: 'boolean', short: 'h', help: 'this help' },
} as const;

const usage = `capt: Cluster API on Temporal

  capt apply -f FILE|DIR|- [--var NAME=value] [--wait] [--timeout 15m] [--dry-run]
  capt get clusters|machines|machinedeployments|kubeadmcontrolplanes [-n NS | -A] [-o table|wide|json|yaml]
  capt describe cluster NAME [--show-conditions all]
  capt delete cluster NAME [--wait]
  capt kubeconfig NAME
  capt scale machinedeployment|kubeadmcontrolplane NAME --replicas N [--wait]
  capt generate cluster NAME [--flavor development|ha] [--kubernetes-version V] [--control-plane-machine-count N] [--worker-machine-count M]
  capt rollout status machinedeployment/NAME|kubeadmcontrolplane/NAME [--watch]
  capt rollout history machinedeployment/NAME|kubeadmcontrolplane/NAME [--revision N]
  capt rollout undo machinedeployment/NAME|kubeadmcontrolplane/NAME [--to-revision N] [--wait]
  capt rollout restart machinedeployment/NAME|kubeadmcontrolplane/NAME [--wait]
  capt rollout pause|resume machinedeployment/NAME|kubeadmcontrolplane/NAME
  capt delete machine NAME          the owner replaces it (how OnDelete MachineDeployments roll)
  capt repair cluster NAME [--dry-run]  rebuild lost owner workflows (terminated, failed); they adopt their machines
  capt health cluster NAME [-o json]   etcd, control-plane components, Nodes, kube-system pods; exit 1 when unhealthy
  capt health clusters [-n NS | -A]    one line per cluster
  capt versions [-o json]
  capt dev start|stop|status       the embedded Temporal dev server + a capt worker, in the background
  capt dev start --persistence postgres   the production topology (Temporal server, Web UI, PostgreSQL) + a capt worker
  capt dev break machine NAME --kubelet|--component C|--all    stop part of a local machine, for demos and tests
  capt dev repair machine NAME [--kubelet|--component C|--all]  undo it (everything, without a flag)
  capt codec key new [--id ID] [--print]   a payload encryption key, written to CAPT_CODEC_KEY_FILE or $CAPT_HOME/codec-keys (never over one)
  capt codec-server [--port N] [--listen ADDR] [--cors-origin ORIGIN ...]   decodes payloads for the Web UI and \`temporal --codec-endpoint\`, for callers with its token
  capt worker                      a worker in the foreground (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE); prints its build id
  capt worker status               each build of the workers: current or ramping, drainage, workflows still running on it
  capt upgrade workers [BUILD] [--ramp N]   make BUILD (default: the newest one started) current, or ramp it to N%
  capt quickstart                  dev start, apply examples/quickstart.yaml, wait, describe

Options:
${Object.entries(options)
  .map(([name, o]) => `  ${'short' in o ? `-${o.short}, ` : '    '}--${name.padEnd(30)} ${o.help}`)
  .join('\n')}

Exit codes: 0 success, 1 the operation failed, 2 bad input.`;

function durationMs(text: string): number {
  const m = /^(\d+)(s|m|h)$/.exec(text);
  if (!m) throw new UsageError(`--timeout ${text}: write it like 90s, 15m or 1h`);
  return Number(m[1]) * { s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 's' | 'm' | 'h'];
}

/** The Kubernetes versions this host's local provider can run; undefined on a host without capt's tools (a remote CLI), where the provider refuses them later. */
function localKubernetesVersions(): string[] | undefined {
  try {
    return availableKubernetesVersions();
  } catch {
    return undefined;
  }
}

/** Progress: one rewritten line on a terminal, a line per change otherwise. Ctrl-C stops only the waiting. */
function progressPrinter(): (s: ClusterView) => void {
  let last = '';
  return (s) => {
    if (!s) return;
    const parts = [
      `${s.name}: ${s.phase}, ${s.step}`,
      ...(s.controlPlane ? [`control plane ${s.controlPlane.readyReplicas}/${s.controlPlane.replicas}`] : []),
      ...s.machineDeployments.map((m) => `${m.name} ${m.readyReplicas}/${m.replicas}`),
    ];
    const line = parts.join(' | ');
    if (line === last) return;
    last = line;
    if (process.stdout.isTTY)
      process.stdout.write(`\r\x1b[K${terminalSafe(line).slice(0, (process.stdout.columns ?? 120) - 1)}`);
    else process.stdout.write(`${terminalSafe(line)}\n`);
  };
}

function endProgress(): void {
  if (process.stdout.isTTY) process.stdout.write('\n');
}

/** The describe tree, with the listed machines' details read from their own workflows. */
async function describeCluster(client: CaptClient, view: ClusterView, allConditions: boolean): Promise<string> {
  const names = [view.controlPlane, ...view.machineDeployments].flatMap((o) =>
    o ? listedMachines(o).map((m) => m.name) : [],
  );
  return describeTree(view, allConditions, await client.machineStatuses(view.namespace, names));
}

const rolloutActions = ['status', 'history', 'undo', 'pause', 'resume', 'restart'] as const;

/** Prints the rollout's state; with --watch, again on every change until it completes. */
async function rolloutStatus(
  client: CaptClient,
  kind: OwnerKind,
  ns: string,
  name: string,
  watch: boolean,
  timeoutMs: number,
): Promise<number> {
  const tty = process.stdout.isTTY;
  const deadline = Date.now() + timeoutMs;
  let last = '';
  let lines = 0;
  for (;;) {
    const { status, pending, done } = await client.rolloutState(kind, ns, name);
    const text = rolloutStatusText(`${kind}/${name}`, status, pending, tty ? 30 : undefined);
    if (text !== last) {
      // On a terminal the block is redrawn in place; elsewhere each change is printed once.
      if (tty && lines) process.stdout.write(`\x1b[${lines}A\x1b[J`);
      process.stdout.write(`${terminalSafe(text)}\n`);
      lines = text.split('\n').length;
      last = text;
    }
    if (done || !watch) return 0;
    if (Date.now() > deadline)
      throw new Error(
        `${kind}/${name} has not finished rolling out after ${Math.round(timeoutMs / 1000)}s; it goes on in the background. Waiting on: ${pending?.message ?? status.step}`,
      );
    await new Promise((r) => setTimeout(r, 1000));
  }
}

function persistenceFlag(value: string | undefined): DevPersistence | undefined {
  if (value === undefined) return undefined;
  const found = devPersistences.find((p) => p === value);
  if (!found)
    throw new UsageError(
      `--persistence ${value}: choose sqlite (the Temporal dev server) or postgres (the production topology)`,
    );
  return found;
}

/** The one fault `--kubelet`, `--component C` or `--all` names; repair without any means the whole machine. */
function faultFlag(values: Values, repair: boolean): MachineFault {
  const { kubelet, component, all } = values;
  if (component !== undefined && !isControlPlaneComponent(component)) {
    throw new UsageError(
      `--component ${component}: not a control-plane component; choose one of ${controlPlaneComponents.join(', ')}`,
    );
  }
  const given = [kubelet && ('kubelet' as const), component, all && ('all' as const)].filter(
    (f): f is MachineFault => !!f,
  );
  if (given.length === 0 && repair) return 'all';
  if (given.length !== 1)
    throw new UsageError(`name one thing to ${repair ? 'repair' : 'break'}: --kubelet, --component C or --all`);
  return given[0]!;
}

/** A fault the machine cannot take is bad input (exit 2); a machine that is not here is not found (exit 1). */
function faultRefusal(err: unknown): never {
  if (err instanceof MachineFaultError && err.reason === 'Refused') throw new UsageError(err.message);
  throw err;
}

function machineFaultText({ ref, faults }: MachineFaultOutcome): string {
  const name = `machine ${ref.namespace}/${ref.name} (cluster ${ref.cluster})`;
  if (faults.length === 0) return `${name}: nothing broken`;
  const silent = faults.includes('kubelet') || faults.includes('all');
  return (
    `${name}: stopped ${faults.includes('all') ? 'whole' : faults.join(', ')}; it stays so until \`capt dev repair machine ${ref.name}\`` +
    (silent
      ? `\nits Node turns NotReady (Ready Unknown) within about ${nodeMonitorGraceSeconds + 5} s, once the node controller misses its heartbeats`
      : '')
  );
}

function portFlag(text: string): number {
  const port = Number(text);
  if (!/^\d+$/.test(text) || port > 65535) throw new UsageError(`--port ${text}: expected a port number, 0 to 65535`);
  return port;
}

/** A browser's Origin header: scheme, host and port, nothing after. */
function originFlag(text: string): string {
  const origin = URL.canParse(text) ? new URL(text).origin : undefined;
  if (origin !== text)
    throw new UsageError(
      `--cors-origin ${text}: expected an origin such as http://127.0.0.1:8233 (scheme, host, port; no path or trailing slash)`,
    );
  return text;
}

/** Resolves on SIGINT or SIGTERM: a foreground server stops cleanly, instead of main's message for interrupted waits. */
function stopSignal(): Promise<void> {
  process.removeAllListeners('SIGINT');
  return new Promise((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
}

type Values = {
  [K in keyof typeof options]?: (typeof options)[K] extends { multiple: true }
    ? string[]
    : (typeof options)[K] extends { type: 'boolean' }
      ? boolean
      : string;
};

async function withClient<T>(fn: (client: CaptClient) => Promise<T>): Promise<T> {
  const client = await CaptClient.connect();
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}

const repoRoot = join(__dirname, '../../..');

/**
 * kubectl spells it `--dry-run=client|server`. capt's dry run asks the running cluster's workflow what it
 * would do, as kubectl's server dry run asks the apiserver: `server` is the same flag, `client` is refused.
 */
function dryRunFlag(arg: string): string {
  const value = /^--dry-run=(.*)$/.exec(arg)?.[1];
  if (value === undefined) return arg;
  if (value === 'server') return '--dry-run';
  throw new UsageError(
    `--dry-run=${value}: capt's dry run asks the running cluster what it would do (as kubectl's --dry-run=server); use --dry-run or --dry-run=server`,
  );
}

async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv.map(dryRunFlag),
    options: options as never,
    allowPositionals: true,
    strict: true,
  }) as { values: Values; positionals: string[] };
  const [command, ...args] = positionals;
  // TLS flags travel as the environment variables the client and the worker read.
  for (const [flag, env] of [
    ['tls-cert', 'TEMPORAL_TLS_CERT'],
    ['tls-key', 'TEMPORAL_TLS_KEY'],
    ['tls-ca', 'TEMPORAL_TLS_CA'],
  ] as const) {
    if (values[flag]) process.env[env] = values[flag];
  }
  if (values.help || !command) {
    process.stdout.write(`${usage}\n`);
    return command || values.help ? 0 : 2;
  }
  const ns = values.namespace ?? 'default';
  // Everything shown goes through terminalSafe: conditions, events and outputs come from clusters and machines.
  const out = (text: string) => process.stdout.write(`${terminalSafe(text)}\n`);
  switch (command) {
    case 'apply': {
      if (!values.filename?.length) throw new UsageError('apply needs -f FILE|DIR|-');
      const dryRun = !!values['dry-run'];
      if (dryRun && values.wait)
        throw new UsageError(
          '--wait with --dry-run: a dry run changes nothing, so there is nothing to wait for; drop one of them',
        );
      const models = loadManifests(
        readSources(values.filename),
        manifestVariables(process.env, values.var ?? []),
        localKubernetesVersions(),
      );
      return withClient(async (client) => {
        for (const r of await client.apply(models, { dryRun })) out(appliedText(r, dryRun));
        if (!values.wait) return 0;
        const timeout = durationMs(values.timeout ?? '15m');
        let failed = false;
        for (const m of models) {
          const status = await client.waitForCluster(m.namespace, m.name, progressPrinter(), timeout);
          endProgress();
          if (status.phase === 'Failed') failed = true;
          out(`cluster ${m.namespace}/${m.name}: ${status.phase}`);
          if (status.phase === 'Failed') out(failedMachines(status));
        }
        return failed ? 1 : 0;
      });
    }
    case 'get': {
      const what = args[0];
      const all = values['all-namespaces'] ? undefined : ns;
      const format = values.output ?? 'table';
      return withClient(async (client) => {
        const wide = format === 'wide';
        const structured = format === 'json' || format === 'yaml';
        if (what === 'clusters' || what === 'cluster') {
          const items = await client.listClusters(all);
          out(structured ? formatOutput({ items }, format) : clustersTable(items, wide));
        } else if (what === 'machines' || what === 'machine') {
          const items = await client.listMachines(all);
          out(structured ? formatOutput({ items }, format) : machinesTable(items, wide));
        } else if (
          [
            'machinedeployments',
            'machinedeployment',
            'md',
            'kubeadmcontrolplanes',
            'kubeadmcontrolplane',
            'kcp',
          ].includes(what ?? '')
        ) {
          const items = await client.listOwners(
            what!.startsWith('m') ? 'MachineDeployment' : 'KubeadmControlPlane',
            all,
          );
          out(structured ? formatOutput({ items }, format) : ownersTable(items));
        } else
          throw new UsageError(
            `get ${what ?? ''}: expected clusters, machines, machinedeployments or kubeadmcontrolplanes`,
          );
        return 0;
      });
    }
    case 'describe': {
      if (args[0] !== 'cluster' || !args[1]) throw new UsageError('usage: capt describe cluster NAME');
      return withClient(async (client) => {
        out(
          await describeCluster(client, await client.clusterStatus(ns, args[1]!), values['show-conditions'] === 'all'),
        );
        return 0;
      });
    }
    case 'delete': {
      if (args[0] === 'machine' && args[1]) {
        return withClient(async (client) => {
          await client.deleteMachine(ns, args[1]!);
          out(`machine.cluster.x-k8s.io/${args[1]} deleting`);
          return 0;
        });
      }
      if (args[0] !== 'cluster' || !args[1])
        throw new UsageError('usage: capt delete cluster NAME [--wait] | capt delete machine NAME');
      return withClient(async (client) => {
        await client.clusterStatus(ns, args[1]!);
        await client.deleteCluster(ns, args[1]!);
        out(`cluster.cluster.x-k8s.io/${args[1]} deleting`);
        if (values.wait) {
          await client.waitForDeletion(ns, args[1]!, progressPrinter(), durationMs(values.timeout ?? '15m'));
          endProgress();
          out(`cluster.cluster.x-k8s.io/${args[1]} deleted`);
        }
        return 0;
      });
    }
    case 'repair': {
      if (args[0] !== 'cluster' || !args[1]) throw new UsageError('usage: capt repair cluster NAME [--dry-run]');
      return withClient(async (client) => {
        const report = await client.repairCluster(ns, args[1]!, { dryRun: values['dry-run'] });
        const adopted = report.dryRun ? [] : await client.waitForAdoption(report, durationMs(values.timeout ?? '15m'));
        out(repairText(report, adopted));
        return 0;
      });
    }
    case 'kubeconfig': {
      if (!args[0]) throw new UsageError('usage: capt kubeconfig NAME');
      return withClient(async (client) => {
        process.stdout.write(await client.kubeconfig(ns, args[0]!));
        // On stderr, so `capt kubeconfig NAME > file` stays a clean kubeconfig.
        process.stderr.write(
          `# kubectl for this cluster's Kubernetes: ${kubectlFor((await client.clusterStatus(ns, args[0]!)).version)}\n`,
        );
        return 0;
      });
    }
    case 'scale': {
      const kind = args[0] === 'md' ? 'machinedeployment' : args[0] === 'kcp' ? 'kubeadmcontrolplane' : args[0];
      const replicas = Number(values.replicas);
      if ((kind !== 'machinedeployment' && kind !== 'kubeadmcontrolplane') || !args[1])
        throw new UsageError('usage: capt scale machinedeployment|kubeadmcontrolplane NAME --replicas N');
      if (values.replicas === undefined || !Number.isInteger(replicas) || replicas < 0)
        throw new UsageError(`--replicas ${values.replicas ?? ''}: expected a whole number >= 0`);
      return withClient(async (client) => {
        const status = await client.scale(kind, ns, args[1]!, replicas);
        out(`${kind}/${args[1]} scaled to ${status.replicas}`);
        return values.wait ? rolloutStatus(client, kind, ns, args[1]!, true, durationMs(values.timeout ?? '15m')) : 0;
      });
    }
    case 'rollout': {
      const [action, target] = args;
      const [kindWord, name] = (target ?? '').split('/');
      const kind = (
        {
          machinedeployment: 'machinedeployment',
          md: 'machinedeployment',
          kubeadmcontrolplane: 'kubeadmcontrolplane',
          kcp: 'kubeadmcontrolplane',
        } as const
      )[kindWord as 'md'];
      if (!rolloutActions.includes(action as never) || !kind || !name)
        throw new UsageError(
          `usage: capt rollout ${rolloutActions.join('|')} machinedeployment/NAME|kubeadmcontrolplane/NAME`,
        );
      const revisionFlag = (flag: 'to-revision' | 'revision') => {
        const text = values[flag];
        if (text === undefined) return undefined;
        if (!/^\d+$/.test(text))
          throw new UsageError(`--${flag} ${text}: expected a revision number (see capt rollout history ${target})`);
        return Number(text);
      };
      const ref = `${kind}/${name}`;
      return withClient(async (client) => {
        if (action === 'history') {
          const revisions = await client.rolloutHistory(kind, ns, name);
          const only = revisionFlag('revision');
          if (only !== undefined) {
            const r = revisions.find((x) => x.revision === only);
            if (!r)
              throw new RejectedError(
                `${ref} has no revision ${only}; revisions: ${revisions.map((x) => x.revision).join(', ')}`,
              );
            out(formatOutput(r, values.output === 'json' ? 'json' : 'yaml'));
          } else
            out(
              values.output === 'json'
                ? JSON.stringify(revisions, null, 2)
                : table(
                    ['REVISION', 'VERSION', 'CHANGE', 'CAUSE', 'AGE'],
                    revisions.map((r) => [String(r.revision), r.version, r.change, r.cause, age(r.at)]),
                  ),
            );
        } else if (action === 'undo') {
          const status = await client.rolloutUndo(kind, ns, name, revisionFlag('to-revision'));
          out(`${ref} rolled back: revision ${status.revision}, ${status.version}`);
          if (values.wait) return rolloutStatus(client, kind, ns, name, true, durationMs(values.timeout ?? '15m'));
        } else if (action === 'pause' || action === 'resume') {
          await client.rolloutPause(kind, ns, name, action === 'pause');
          out(`${ref} ${action}d`);
        } else if (action === 'restart') {
          const status = await client.rolloutRestart(kind, ns, name);
          out(`${ref} restarted: revision ${status.revision}`);
          if (values.wait) return rolloutStatus(client, kind, ns, name, true, durationMs(values.timeout ?? '15m'));
        } else return rolloutStatus(client, kind, ns, name, !!values.watch, durationMs(values.timeout ?? '15m'));
        return 0;
      });
    }
    case 'health': {
      const [what, name] = args;
      const structured = values.output === 'json' || values.output === 'yaml' ? values.output : undefined;
      if (what === 'cluster' && name) {
        return withClient(async (client) => {
          const health = await client.clusterHealth(ns, name);
          out(structured ? formatOutput(health, structured) : healthText(health));
          return health.healthy ? 0 : 1;
        });
      }
      if (what === 'clusters') {
        return withClient(async (client) => {
          const items = await client.clustersHealth(values['all-namespaces'] ? undefined : ns);
          out(structured ? formatOutput({ items }, structured) : healthTable(items));
          return items.every((i) => i.health?.healthy) ? 0 : 1;
        });
      }
      throw new UsageError('usage: capt health cluster NAME [-o json] | capt health clusters [-n NS | -A] [-o json]');
    }
    case 'versions': {
      const versions = availableKubernetesVersions();
      const kubectl = Object.fromEntries(versions.map((v) => [v, kubectlFor(v)]));
      const info = {
        capt: JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')).version as string,
        providers: { local: { kubernetesVersions: versions, kubectl } },
      };
      out(
        values.output === 'json'
          ? JSON.stringify(info, null, 2)
          : [
              `capt ${info.capt}`,
              `provider local: Kubernetes ${versions.join(', ')}`,
              ...versions.map((v) => `kubectl for ${v}: ${kubectl[v]}`),
            ].join('\n'),
      );
      return 0;
    }
    case 'generate': {
      if (args[0] !== 'cluster' || !args[1])
        throw new UsageError('usage: capt generate cluster NAME --kubernetes-version V');
      const version = values['kubernetes-version'] ?? availableKubernetesVersions().at(-1)!;
      const vars = {
        CLUSTER_NAME: args[1],
        KUBERNETES_VERSION: version,
        CONTROL_PLANE_MACHINE_COUNT: controlPlaneMachineCount(values.flavor, values['control-plane-machine-count']),
        WORKER_MACHINE_COUNT: values['worker-machine-count'] ?? '2',
      };
      const template = readFileSync(join(repoRoot, 'examples/quickstart.yaml'), 'utf8');
      loadManifests([{ file: `generated cluster ${args[1]}`, text: template }], vars);
      out(substituteVariables(template, vars).text.trimEnd());
      return 0;
    }
    case 'dev': {
      if (args[0] === 'start') {
        const status = await devStart({ ...devPorts(), persistence: persistenceFlag(values.persistence) }, (line) =>
          out(line),
        );
        out(
          `Temporal: ${status.address}\nWeb UI:   ${status.ui}\ncodec:    ${status.codecEndpoint} (temporal workflow show --codec-endpoint ${status.codecEndpoint} --codec-auth "Bearer $(cat ${codecTokenFile()})"; a browser opens ${status.codecEndpoint}/login?token=TOKEN once, TOKEN from that file)\nworker:   pid ${status.worker}\ndatabase: ${status.database}`,
        );
      } else if (args[0] === 'stop') {
        await devStop();
        out(
          'stopped Temporal, the codec server and the capt worker (clusters, machines, the database and the key keep their state)',
        );
      } else if (args[0] === 'status') {
        const s = await devStatus();
        const running = (pid: number | undefined, where = '') => (pid ? `running (pid ${pid})${where}` : 'stopped');
        out(
          `Temporal: ${s.temporal ? `running (pid ${s.temporal}, ${s.persistence}) at ${s.address}, Web UI ${s.ui}` : 'stopped'}\ncodec:    ${running(s.codecServer, ` at ${s.codecEndpoint}`)}\nworker:   ${running(s.worker)}\ndatabase: ${s.database}`,
        );
      } else if ((args[0] === 'break' || args[0] === 'repair') && args[1] === 'machine' && args[2]) {
        out(
          machineFaultText(
            await changeDevMachine(args[0], ns, args[2], faultFlag(values, args[0] === 'repair')).catch(faultRefusal),
          ),
        );
      } else
        throw new UsageError(
          'usage: capt dev start|stop|status | capt dev break|repair machine NAME [--kubelet|--component C|--all]',
        );
      return 0;
    }
    case 'codec': {
      if (args[0] !== 'key' || args[1] !== 'new') throw new UsageError('usage: capt codec key new [--id ID] [--print]');
      if (values.id !== undefined && !isCodecKeyId(values.id))
        throw new UsageError(`--id ${values.id}: a key id is 1 to 64 letters, digits, '.', '_' or '-'`);
      const key = newCodecKey(values.id);
      if (values.print) {
        out(codecKeyLine(key));
        return 0;
      }
      await createCodecKeyFile(codecKeyFile(), key);
      out(
        `created ${codecKeyFile()} with key '${key.id}' (mode 0600); give the same file, or its line in CAPT_CODEC_KEYS, to every host that runs capt`,
      );
      return 0;
    }
    case 'codec-server': {
      const codec = new AesGcmCodec(loadCodecKeys(), process.env[acceptPlaintextEnv] === '1');
      const server = await startCodecServer({
        host: values.listen ?? '127.0.0.1',
        port: portFlag(values.port ?? String(defaultCodecPort)),
        corsOrigins: (values['cors-origin'] ?? []).map(originFlag),
        codec,
        token: await ensureCodecToken(),
      });
      out(
        `capt codec server ready at ${server.url}${values['cors-origin']?.length ? `, for Web UIs at ${values['cors-origin'].join(', ')}` : ''}; callers present the token in ${codecTokenFile()}`,
      );
      await stopSignal();
      await server.close();
      return 0;
    }
    case 'worker': {
      if (args[0] === 'status') {
        return withClient(async (client) => {
          const builds = await workerBuilds(client.client);
          out(
            values.output === 'json' || values.output === 'yaml'
              ? formatOutput(builds, values.output)
              : workerBuildsText(builds),
          );
          return 0;
        });
      }
      if (args.length) throw new UsageError('usage: capt worker [--serve core,local] | capt worker status [-o json]');
      if (values.serve !== undefined) process.env.CAPT_WORKER_SERVES = values.serve;
      const { workerMain } = await import('../worker/worker-main');
      await workerMain();
      return 0;
    }
    case 'upgrade': {
      if (args[0] !== 'workers' || args.length > 2)
        throw new UsageError('usage: capt upgrade workers [BUILD] [--ramp N]');
      const ramp = values.ramp === undefined ? undefined : Number(values.ramp);
      if (ramp !== undefined && !(values.ramp!.trim() !== '' && ramp >= 0 && ramp <= 100))
        throw new UsageError(`--ramp ${values.ramp}: a percentage from 0 to 100`);
      return withClient(async (client) => {
        out(
          upgradeText(await upgradeWorkers(client.client, { buildId: args[1], rampPercentage: ramp, waitMs: 60_000 })),
        );
        return 0;
      });
    }
    case 'quickstart': {
      toolPaths();
      const status = await devStart(undefined, (line) => out(line));
      const models = loadManifests(
        readSources([join(repoRoot, 'examples/quickstart.yaml')]),
        manifestVariables(process.env, values.var ?? []),
      );
      return withClient(async (client) => {
        for (const r of await client.apply(models)) out(appliedText(r, false));
        const m = models[0]!;
        const final = await client.waitForCluster(
          m.namespace,
          m.name,
          progressPrinter(),
          durationMs(values.timeout ?? '15m'),
        );
        endProgress();
        out(await describeCluster(client, final, false));
        out(`\nTemporal Web UI: ${status.ui}/namespaces/default/workflows?query=CaptCluster%3D%22${m.name}%22`);
        out(
          `Try the cluster:  npx capt kubeconfig ${m.name} > ${m.name}.kubeconfig && ${kubectlFor(final.version)} --kubeconfig ${m.name}.kubeconfig get nodes`,
        );
        return final.phase === 'Failed' ? 1 : 0;
      });
    }
    default:
      throw new UsageError(`unknown command '${command}'; run capt --help`);
  }
}

export async function main(argv = process.argv.slice(2)): Promise<void> {
  const verbose = argv.includes('-v') || argv.includes('--verbose');
  // Ctrl-C during a wait stops the waiting only: the operation is a workflow and goes on.
  process.once('SIGINT', () => {
    process.stderr.write('\nstopped waiting; the operation goes on (capt describe cluster NAME shows it)\n');
    process.exit(130);
  });
  try {
    process.exitCode = await run(argv);
  } catch (err) {
    const e = err as Error;
    const badInput =
      e instanceof ManifestError ||
      e instanceof UsageError ||
      e instanceof RejectedError ||
      (e as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
    process.stderr.write(`error: ${terminalSafe(e.message)}\n`);
    if (verbose && e.stack) process.stderr.write(`${e.stack}\n`);
    process.exitCode = badInput ? 2 : 1;
  }
}

if (require.main === module) void main();
