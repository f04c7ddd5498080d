import { Option } from 'commander';
import { defaultCodecPort } from '../codec/codec-server';
import { devPersistences } from '../dev/dev-stack';
import { controlPlaneComponents } from '../../providers/local/control-plane-components';

/**
 * One flag of some command: `value` names what it takes (a flag without one is a switch), `choices` are
 * what help and shell completion offer; the commands check values themselves, with messages of their own.
 */
interface FlagSpec {
  short?: string;
  value?: string;
  multiple?: true;
  default?: string;
  choices?: readonly string[];
  help: string;
}

/** Every flag of every command, as data: each command names the ones it takes (commands.ts). */
export const flags = {
  filename: { short: 'f', value: 'FILE', multiple: true, help: 'manifest file, folder or - for stdin; repeatable' },
  var: {
    value: 'NAME=value',
    multiple: true,
    help: 'NAME=value for ${NAME} in manifests (overrides the environment); repeatable',
  },
  wait: { help: 'wait until the operation is done' },
  timeout: { value: 'DURATION', default: '15m', help: 'how long to wait (e.g. 90s, 15m, 1h)' },
  dryRun: {
    help: 'print what would change (machines replaced, owners rebuilt) and change nothing; --dry-run=server alike',
  },
  namespace: { short: 'n', value: 'NS', default: 'default', help: 'namespace' },
  allNamespaces: { short: 'A', help: 'every namespace' },
  output: {
    short: 'o',
    value: 'FORMAT',
    choices: ['table', 'wide', 'json', 'yaml'],
    help: 'output format (default: a table; wide: more columns)',
  },
  showConditions: { value: 'all', choices: ['all'], help: 'all: every condition' },
  replicas: { value: 'N', help: 'the replica count' },
  within: { value: 'DAYS', default: '30', help: 'rotate what expires within this many days' },
  toRevision: { value: 'N', help: 'the revision to return to (default: the previous one)' },
  revision: { value: 'N', help: 'show one revision whole' },
  watch: { short: 'w', help: 'follow until the rollout completes' },
  flavor: {
    value: 'FLAVOR',
    choices: ['development', 'ha'],
    help: 'development: 1 control-plane machine (the default); ha: 3',
  },
  kubernetesVersion: { value: 'V', help: 'Kubernetes version (default: the newest this host runs)' },
  controlPlaneMachineCount: {
    value: 'N',
    help: 'control-plane machines (default: 1 for the development flavor, 3 for ha)',
  },
  workerMachineCount: { value: 'N', default: '2', help: 'worker machines' },
  kubelet: { help: "the machine's simulated kubelet (its Node turns NotReady)" },
  component: {
    value: 'C',
    choices: controlPlaneComponents,
    help: 'one control-plane component',
  },
  all: { help: 'the whole machine (every process; the default of repair)' },
  persistence: {
    value: 'KIND',
    choices: devPersistences,
    help: 'sqlite: the Temporal dev server; postgres: the production topology (Temporal server, Web UI server, PostgreSQL); default: what runs, else sqlite',
  },
  temporalNodes: {
    value: 'N',
    help: 'with --persistence postgres: run Temporal as N server processes (1-5) on the one database, behind a frontend proxy on the Temporal port; default: what runs, else 1',
  },
  kubeconfig: {
    value: 'FILE',
    help: 'the kubeconfig of the Kubernetes API (the management API) to serve or install into (its current context)',
  },
  withoutManagementApi: {
    help: "without the management API (Cluster API's kinds served by a kube-apiserver on 127.0.0.1, CAPT_DEV_API_PORT or 6443)",
  },
  serve: {
    value: 'QUEUES',
    help: 'what it serves: core (the capt-core and capt-owners queues) and/or a provider (local), comma-separated; default all (CAPT_WORKER_SERVES)',
  },
  maxCachedWorkflows: {
    value: 'N',
    help: 'workflow runs each workflow queue keeps cached between tasks (CAPT_MAX_CACHED_WORKFLOWS; default 2000): an evicted run is replayed on its next task, so this trades memory for CPU',
  },
  metricsAddress: {
    value: 'HOST:PORT',
    help: "serve Prometheus metrics (the SDK's and capt's, docs/metrics.md) at http://HOST:PORT/metrics (CAPT_METRICS_ADDRESS)",
  },
  ramp: { value: 'N', help: 'send this percentage (0-100) of new workflows to the new build instead of all' },
  id: { value: 'ID', help: "the key id (default: today's date and a random suffix)" },
  print: { help: 'print the key as ID:BASE64 and write nothing (to add to a key file or CAPT_CODEC_KEYS)' },
  interval: { value: 'DURATION', default: '2s', help: 'how often to read the management API' },
  webhookPort: {
    value: 'PORT',
    help: "also serve capt's defaulting, validating and conversion webhooks on 127.0.0.1:PORT (0: any free port) and register them with the management API (as capt dev start does)",
  },
  webhookClientCa: {
    value: 'FILE',
    help: 'with --webhook-port: the CA (PEM) of the client certificate the apiserver presents to webhooks; only callers with one it issued are answered (capt dev start passes its own)',
  },
  insecureWebhookAnyCaller: {
    help: 'answer whoever reaches the webhooks, not only the apiserver by its client certificate: only for an apiserver that cannot be given one, with the port published to it alone',
  },
  webhookSecret: {
    value: 'NAMESPACE/NAME',
    help: "also serve the webhooks capt init --webhook-url registered, with the certificate of that Secret (capt-system/capt-webhook-serving), answering only the apiserver's client certificate issued there; registers nothing",
  },
  webhookListen: {
    value: 'HOST:PORT',
    help: "with --webhook-secret: the address to serve them on (default: the registered URL's, when its host is an IP address)",
  },
  webhookUrl: {
    value: 'URL',
    help: 'also install the defaulting, validating and conversion webhooks, called at https://HOST:PORT (where the apiserver reaches capt bridge --webhook-secret), with a CA and serving certificate kept in Secret capt-system/capt-webhook-serving',
  },
  port: { value: 'PORT', default: String(defaultCodecPort), help: 'the port' },
  listen: { value: 'ADDRESS', default: '127.0.0.1', help: 'the address to listen on (the default: this host only)' },
  corsOrigin: {
    value: 'ORIGIN',
    multiple: true,
    help: 'a Web UI origin its browser may call from, e.g. http://127.0.0.1:8233; repeatable',
  },
  tlsCert: { value: 'FILE', help: 'client certificate for mutual TLS to Temporal (TEMPORAL_TLS_CERT)' },
  tlsKey: { value: 'FILE', help: 'client key for mutual TLS to Temporal (TEMPORAL_TLS_KEY)' },
  tlsCa: { value: 'FILE', help: 'CA certificate of the Temporal server (TEMPORAL_TLS_CA)' },
  verbose: { short: 'v', help: 'show stacks on errors' },
} as const satisfies Record<string, FlagSpec>;

export type FlagName = keyof typeof flags;

/** What a command's action receives, by flag: a list for repeatable flags, text for valued ones, else a switch. */
export type FlagValues = {
  [K in FlagName]?: (typeof flags)[K] extends { multiple: true }
    ? string[]
    : (typeof flags)[K] extends { value: string }
      ? string
      : boolean;
};

/** Mutual TLS to Temporal, which every command that reaches it takes, as the variables the client and worker read. */
export const temporalFlagEnv = {
  tlsCert: 'TEMPORAL_TLS_CERT',
  tlsKey: 'TEMPORAL_TLS_KEY',
  tlsCa: 'TEMPORAL_TLS_CA',
} as const satisfies Partial<Record<FlagName, string>>;
export const temporalFlags = Object.keys(temporalFlagEnv) as (keyof typeof temporalFlagEnv)[];

/** `dryRun` is spelled `--dry-run`: commander derives the same camel-case name back from it. */
export const longFlag = (name: FlagName) => `--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

/** The commander option for a flag of the table. */
export function flagOption(name: FlagName): Option {
  const spec: FlagSpec = flags[name];
  const value = spec.value ? ` <${spec.value}>` : '';
  const option = new Option(`${spec.short ? `-${spec.short}, ` : ''}${longFlag(name)}${value}`, spec.help);
  if (spec.default !== undefined) option.default(spec.default);
  // Repeated, a flag gathers its values; once, commander would keep only the last.
  if (spec.multiple) option.argParser((v: string, previous: string[] | undefined) => [...(previous ?? []), v]);
  if (spec.choices) option.argChoices = [...spec.choices];
  return option;
}
