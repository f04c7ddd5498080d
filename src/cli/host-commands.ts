import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loadManifests } from '../api/load-manifests';
import { manifestVariables } from '../api/variables';
import { acceptPlaintextEnv, AesGcmCodec } from '../codec/aes-gcm-codec';
import {
  codecKeyFile,
  codecKeyLine,
  createCodecKeyFile,
  isCodecKeyId,
  loadCodecKeys,
  newCodecKey,
} from '../codec/codec-keys';
import { startCodecServer } from '../codec/codec-server';
import { codecTokenFile, ensureCodecToken } from '../codec/codec-token';
import { upgradeWorkers, workerBuilds } from '../client/worker-upgrade';
import { changeDevMachine, type MachineFaultOutcome } from '../dev/dev-machine-faults';
import {
  devPersistences,
  devPorts,
  devStart,
  devStatus,
  devStop,
  managementApiDir,
  type DevPersistence,
} from '../dev/dev-stack';
import { managementKubeconfig } from '../dev/management-api';
import { ManagementApi } from '../management-api/api-client';
import { installCrdsAndRoles } from '../management-api/crd-install';
import { tenantRolesApplied } from '../management-api/tenant-roles';
import {
  isControlPlaneComponent,
  controlPlaneComponents,
  nodeMonitorGraceSeconds,
} from '../../providers/local/control-plane-components';
import { MachineFaultError, type MachineFault } from '../../providers/local/machine-faults';
import { availableKubernetesVersions, clusterApiConfig, kubectlFor, toolPaths } from '../tools';
import { appliedText } from './apply-text';
import {
  describeCluster,
  durationMs,
  endProgress,
  localKubernetesVersions,
  out,
  progressPrinter,
  repoRoot,
  withClient,
  type Action,
} from './cluster-commands';
import type { FlagValues } from './flags';
import { readSources, UsageError } from './read-sources';
import { maxTemporalNodes } from '../dev/postgres-topology';
import { metricsTelemetry } from '../worker/worker-metrics';
import { maxCachedWorkflows } from '../worker/workflow-cache';
import { formatOutput } from './render';
import { upgradeText, workerBuildsText } from './worker-builds-text';
import { bridgeWebhookFlags, webhookUrlFlag } from './webhook-flags';

export const versions: Action = async (_, values) => {
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
};

function temporalNodesFlag(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || n > maxTemporalNodes)
    throw new UsageError(`--temporal-nodes ${value}: give a whole number from 1 to ${maxTemporalNodes}`);
  return n;
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

/**
 * `capt init --kubeconfig FILE [--webhook-url URL]`: what `capt dev start` installs into its own apiserver, into
 * any other, and with a URL the webhooks that `capt bridge --webhook-secret` then serves. The URL is checked
 * before anything is written.
 */
export const init: Action = async (_, values) => {
  if (!values.kubeconfig) throw new UsageError('--kubeconfig FILE is required: the Kubernetes API to install into');
  const webhook = values.webhookUrl === undefined ? undefined : webhookUrlFlag(values.webhookUrl);
  const text = await readFile(values.kubeconfig, 'utf8').catch((err: Error) => {
    throw new UsageError(`--kubeconfig ${values.kubeconfig}: ${err.message}`);
  });
  const api = await ManagementApi.fromKubeconfig(text);
  try {
    const { crds, applied, roles } = await installCrdsAndRoles(api);
    out(
      `${crds} CRDs Established (Cluster API ${clusterApiConfig().version} and capt's provider kinds; ${applied} created or updated, ${crds - applied} already current)\n${tenantRolesApplied(roles)}`,
    );
    const { installWebhooks, webhooksNotInstalled } = await import('../bridge/webhook-install');
    out(webhook ? (await installWebhooks(api, webhook)).join('\n') : webhooksNotInstalled);
  } finally {
    api.close();
  }
  return 0;
};

/** How to reach the management API; its key is printed by `capt dev kubeconfig` only. */
const kubectlHint = 'kubectl --kubeconfig <(capt dev kubeconfig) get clusters -A';

export const devStartCommand: Action = async (_, values) => {
  const status = await devStart(
    {
      ...devPorts(),
      persistence: persistenceFlag(values.persistence),
      temporalNodes: temporalNodesFlag(values.temporalNodes),
      managementApi: !values.withoutManagementApi,
    },
    (line) => out(line),
  );
  out(
    `Temporal: ${status.address}\nWeb UI:   ${status.ui}\ncodec:    ${status.codecEndpoint} (temporal workflow show --codec-endpoint ${status.codecEndpoint} --codec-auth "Bearer $(cat ${codecTokenFile()})"; a browser opens ${status.codecEndpoint}/login?token=TOKEN once, TOKEN from that file)\nworker:   pid ${status.worker}, metrics at ${status.metrics}\ndatabase: ${status.database}` +
      (status.managementApi
        ? `\nAPI:      ${status.managementApiServer} (${kubectlHint}); bridge pid ${status.bridge}`
        : ''),
  );
  return 0;
};

export const devStopCommand: Action = async () => {
  await devStop();
  out(
    'stopped Temporal, the codec server, the capt worker and the management API (clusters, machines, the databases and the keys keep their state)',
  );
  return 0;
};

const running = (pid: number | undefined, where = '') => (pid ? `running (pid ${pid})${where}` : 'stopped');

export const devStatusCommand: Action = async () => {
  const s = await devStatus();
  out(
    `Temporal: ${s.temporal ? `running (pid ${s.temporal}, ${s.persistence}${s.temporalNodes && s.temporalNodes > 1 ? `, ${s.temporalNodes} server processes` : ''}) at ${s.address}, Web UI ${s.ui}` : 'stopped'}\ncodec:    ${running(s.codecServer, ` at ${s.codecEndpoint}`)}\nworker:   ${running(s.worker, `, metrics at ${s.metrics}`)}\nAPI:      ${running(s.managementApi, ` at ${s.managementApiServer}`)}\nbridge:   ${running(s.bridge)}\ndatabase: ${s.database}`,
  );
  return 0;
};

export const devKubeconfigCommand: Action = async () => {
  process.stdout.write(await managementKubeconfig(managementApiDir()));
  return 0;
};

/** The one fault `--kubelet`, `--component C` or `--all` names; repair without any means the whole machine. */
function faultFlag(values: FlagValues, repair: boolean): MachineFault {
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

const devMachineFault =
  (change: 'break' | 'repair'): Action =>
  async ([name], values) => {
    const outcome = await changeDevMachine(
      change,
      values.namespace!,
      name!,
      faultFlag(values, change === 'repair'),
    ).catch(faultRefusal);
    out(machineFaultText(outcome));
    return 0;
  };
export const devBreakMachine = devMachineFault('break');
export const devRepairMachine = devMachineFault('repair');

export const codecKeyNew: Action = async (_, values) => {
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
};

function portFlag(text: string, flag = '--port'): number {
  const port = Number(text);
  if (!/^\d+$/.test(text) || port > 65535) throw new UsageError(`${flag} ${text}: expected a port number, 0 to 65535`);
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

export const codecServer: Action = async (_, values) => {
  const codec = new AesGcmCodec(loadCodecKeys(), process.env[acceptPlaintextEnv] === '1');
  const origins = values.corsOrigin ?? [];
  const server = await startCodecServer({
    host: values.listen!,
    port: portFlag(values.port!),
    corsOrigins: origins.map(originFlag),
    codec,
    token: await ensureCodecToken(),
  });
  out(
    `capt codec server ready at ${server.url}${origins.length ? `, for Web UIs at ${origins.join(', ')}` : ''}; callers present the token in ${codecTokenFile()}`,
  );
  await stopSignal();
  await server.close();
  return 0;
};

export const bridge: Action = async (_, values) => {
  if (!values.kubeconfig) throw new UsageError('bridge needs --kubeconfig FILE: the management API to serve');
  const webhooks = bridgeWebhookFlags(values, (text) => portFlag(text, '--webhook-port'));
  const { bridgeMain } = await import('../bridge/bridge-main');
  await bridgeMain({
    kubeconfigFile: values.kubeconfig,
    intervalMs: durationMs(values.interval!),
    kubernetesVersions: localKubernetesVersions(),
    webhooks,
    stop: stopSignal(),
  });
  return 0;
};

/**
 * A worker setting given as a flag: checked here by the worker's own parser, before the worker starts, so a bad one
 * exits as bad usage; the worker reads it again from the environment.
 */
function workerSetting(value: string | undefined, env: string, check: (value: string) => unknown): void {
  if (value === undefined) return;
  try {
    check(value);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  process.env[env] = value;
}

export const worker: Action = async (_, values) => {
  if (values.serve !== undefined) process.env.CAPT_WORKER_SERVES = values.serve;
  workerSetting(values.metricsAddress, 'CAPT_METRICS_ADDRESS', (v) => metricsTelemetry(v, '--metrics-address'));
  workerSetting(values.maxCachedWorkflows, 'CAPT_MAX_CACHED_WORKFLOWS', (v) =>
    maxCachedWorkflows(v, '--max-cached-workflows'),
  );
  const { workerMain } = await import('../worker/worker-main');
  await workerMain();
  return 0;
};

export const workerStatus: Action = (_, values) =>
  withClient(async (client) => {
    const builds = await workerBuilds(client.client);
    out(
      values.output === 'json' || values.output === 'yaml'
        ? formatOutput(builds, values.output)
        : workerBuildsText(builds),
    );
    return 0;
  });

export const upgradeWorkersCommand: Action = ([buildId], values) => {
  const ramp = values.ramp === undefined ? undefined : Number(values.ramp);
  if (ramp !== undefined && !(values.ramp!.trim() !== '' && ramp >= 0 && ramp <= 100))
    throw new UsageError(`--ramp ${values.ramp}: a percentage from 0 to 100`);
  return withClient(async (client) => {
    out(upgradeText(await upgradeWorkers(client.client, { buildId, rampPercentage: ramp, waitMs: 60_000 })));
    return 0;
  });
};

export const quickstart: Action = async (_, values) => {
  toolPaths();
  const status = await devStart(undefined, (line) => out(line));
  const models = loadManifests(
    readSources([join(repoRoot, 'examples/quickstart.yaml')]),
    manifestVariables(process.env, values.var ?? []),
  );
  return withClient(async (client) => {
    for (const r of await client.apply(models)) out(appliedText(r, false));
    const m = models[0]!;
    const final = await client.waitForCluster(m.namespace, m.name, progressPrinter(), durationMs(values.timeout!));
    endProgress();
    out(await describeCluster(client, final, false));
    out(`\nTemporal Web UI: ${status.ui}/namespaces/default/workflows?query=CaptCluster%3D%22${m.name}%22`);
    out(
      `Try the cluster:  npx capt kubeconfig ${m.name} > ${m.name}.kubeconfig && ${kubectlFor(final.version)} --kubeconfig ${m.name}.kubeconfig get nodes`,
    );
    return final.phase === 'Failed' ? 1 : 0;
  });
};
