import { Argument, Command, CommanderError } from 'commander';
import * as cluster from './cluster-commands';
import * as certificates from './certificate-commands';
import { completionScript, shells, type Shell } from './completion';
import { flagOption, temporalFlagEnv, temporalFlags, type FlagName, type FlagValues } from './flags';
import * as host from './host-commands';
import { UsageError } from './read-sources';

interface ArgumentSpec {
  name: string;
  help: string;
  optional?: true;
  /** Takes the rest of the command line (the last argument only). */
  variadic?: true;
  /** The only values it takes: commander refuses others, completion offers them. */
  choices?: readonly string[];
}

/** One command of `capt`: a leaf runs `action`; a group only holds `commands`; `worker` is both. */
interface CommandSpec {
  name: string;
  help: string;
  args?: ArgumentSpec[];
  flags?: readonly FlagName[];
  action?: cluster.Action;
  commands?: CommandSpec[];
}

const name = (what: string): ArgumentSpec => ({ name: 'NAME', help: `the ${what}'s name` });
const rolloutTarget: ArgumentSpec = {
  name: 'KIND/NAME',
  help: 'machinedeployment/NAME or kubeadmcontrolplane/NAME (md/NAME, kcp/NAME)',
};
const waiting = ['wait', 'timeout'] as const;
/** Flags of every command that reads or changes clusters through Temporal. */
const clusterFlags = ['namespace', ...temporalFlags] as const;

const rolloutCommand = (command: string, help: string, flags: readonly FlagName[], action: cluster.Action) => ({
  name: command,
  help,
  args: [rolloutTarget],
  flags: [...flags, ...clusterFlags],
  action,
});

/** `capt dev break|repair machine NAME`. */
const devMachineCommand = (command: string, help: string, machineHelp: string, action: cluster.Action) => ({
  name: command,
  help,
  commands: [
    {
      name: 'machine',
      help: machineHelp,
      args: [name('machine')],
      flags: ['namespace', 'kubelet', 'component', 'all'] as const,
      action,
    },
  ],
});

/** Every command, its arguments and flags: help, parsing and shell completion all come from this tree. */
export const commandTree: CommandSpec[] = [
  {
    name: 'apply',
    help: 'create or change clusters from manifests (kubectl apply alike)',
    flags: ['filename', 'var', ...waiting, 'dryRun', ...temporalFlags],
    action: cluster.apply,
  },
  {
    name: 'get',
    help: 'list clusters, machines, their owners, ClusterResourceSets, or every certificate with its expiry',
    args: [{ name: 'KIND', help: 'what to list', choices: Object.keys(cluster.listedKinds) }],
    flags: ['allNamespaces', 'output', ...clusterFlags],
    action: cluster.get,
  },
  {
    name: 'describe',
    help: 'show an object and what it holds',
    commands: [
      {
        name: 'cluster',
        help: "a cluster's tree: control plane, MachineDeployments, machines, conditions",
        args: [name('cluster')],
        flags: ['showConditions', ...clusterFlags],
        action: cluster.describeClusterCommand,
      },
      {
        name: 'clusterresourceset',
        help: "a ClusterResourceSet: its resources, its ResourcesApplied condition and each cluster's binding",
        args: [name('clusterresourceset')],
        flags: clusterFlags,
        action: cluster.describeResourceSet,
      },
    ],
  },
  {
    name: 'delete',
    help: 'delete a cluster, a machine or a ClusterResourceSet',
    commands: [
      {
        name: 'cluster',
        help: 'delete a cluster and everything in it',
        args: [name('cluster')],
        flags: [...waiting, ...clusterFlags],
        action: cluster.deleteCluster,
      },
      {
        name: 'machine',
        help: 'delete a machine: its owner replaces it (how OnDelete MachineDeployments roll)',
        args: [name('machine')],
        flags: clusterFlags,
        action: cluster.deleteMachine,
      },
      {
        name: 'clusterresourceset',
        help: 'stop a ClusterResourceSet; what it applied stays in the clusters, as Cluster API leaves it',
        args: [name('clusterresourceset')],
        flags: clusterFlags,
        action: cluster.deleteResourceSet,
      },
    ],
  },
  {
    name: 'annotate',
    help: 'set or remove annotations (kubectl annotate alike)',
    commands: [
      {
        name: 'machine',
        help: 'annotate one machine, e.g. cluster.x-k8s.io/remediate-machine= (its health check replaces it)',
        args: [
          name('machine'),
          { name: 'KEY=VALUE|KEY-', help: 'KEY=VALUE sets an annotation, KEY- removes it', variadic: true },
        ],
        flags: clusterFlags,
        action: cluster.annotateMachine,
      },
    ],
  },
  {
    name: 'repair',
    help: 'rebuild lost workflows',
    commands: [
      {
        name: 'cluster',
        help: 'rebuild lost owner workflows (terminated, failed); they adopt their machines',
        args: [name('cluster')],
        flags: ['dryRun', 'timeout', ...clusterFlags],
        action: cluster.repairCluster,
      },
    ],
  },
  {
    name: 'kubeconfig',
    help: "a new admin kubeconfig on stdout (from any host); the matching kubectl's path on stderr",
    args: [name('cluster')],
    flags: clusterFlags,
    action: cluster.kubeconfig,
  },
  {
    name: 'scale',
    help: 'set the replicas of a MachineDeployment or a KubeadmControlPlane',
    args: [{ name: 'KIND', help: 'the owner kind', choices: Object.keys(cluster.ownerKinds) }, name('owner')],
    flags: ['replicas', ...waiting, ...clusterFlags],
    action: cluster.scale,
  },
  {
    name: 'rollout',
    help: 'manage the rollout of a MachineDeployment or a KubeadmControlPlane',
    commands: [
      rolloutCommand('status', "the rollout's progress", ['watch', 'timeout'], cluster.rolloutStatusCommand),
      rolloutCommand('history', 'the revisions', ['revision', 'output'], cluster.rolloutHistory),
      rolloutCommand('undo', 'return to an earlier revision', ['toRevision', ...waiting], cluster.rolloutUndo),
      rolloutCommand('pause', 'hold the rollout', [], cluster.rolloutPause),
      rolloutCommand('resume', 'go on with the rollout', [], cluster.rolloutResume),
      rolloutCommand('restart', 'replace every machine', waiting, cluster.rolloutRestart),
    ],
  },
  {
    name: 'rotate',
    help: 'replace machines before their certificates expire',
    commands: [
      {
        name: 'certificates',
        help: "replace the machines whose certificates expire within --within days, and no other, within each owner's rollout bounds (capt get certificates lists them); the cluster's CAs are not rotated",
        args: [name('cluster')],
        flags: ['within', 'dryRun', ...waiting, ...clusterFlags],
        action: certificates.rotateCertificates,
      },
    ],
  },
  {
    name: 'generate',
    help: 'print manifests',
    commands: [
      {
        name: 'cluster',
        help: "a cluster's manifests, from examples/quickstart.yaml",
        args: [name('cluster')],
        flags: ['flavor', 'kubernetesVersion', 'controlPlaneMachineCount', 'workerMachineCount'],
        action: cluster.generateCluster,
      },
    ],
  },
  {
    name: 'health',
    help: 'check running clusters; exit 1 when one is unhealthy',
    commands: [
      {
        name: 'cluster',
        help: 'etcd, control-plane components, machines against their Nodes, Nodes, kube-system pods; the first line names what is wrong',
        args: [name('cluster')],
        flags: ['output', ...clusterFlags],
        action: cluster.healthCluster,
      },
      {
        name: 'clusters',
        help: 'one line per cluster',
        flags: ['allNamespaces', 'output', ...clusterFlags],
        action: cluster.healthClusters,
      },
    ],
  },
  {
    name: 'init',
    help: "install Cluster API's CRDs, capt's provider kinds, the tenant ClusterRoles and, with --webhook-url, capt's webhooks into an existing Kubernetes API (create or update)",
    flags: ['kubeconfig', 'webhookUrl'],
    action: host.init,
  },
  {
    name: 'versions',
    help: "capt's version, the Kubernetes versions this host runs and their kubectl",
    flags: ['output'],
    action: host.versions,
  },
  {
    name: 'dev',
    help: 'the embedded Temporal, a capt worker and the management API, in the background',
    commands: [
      {
        name: 'start',
        help: 'start Temporal (dev server or production topology), the codec server, a capt worker and the management API',
        flags: ['persistence', 'temporalNodes', 'withoutManagementApi'],
        action: host.devStartCommand,
      },
      {
        name: 'stop',
        help: 'stop them; clusters, machines, the database and the key keep their state',
        action: host.devStopCommand,
      },
      { name: 'status', help: 'what runs, and where the data is', action: host.devStatusCommand },
      {
        name: 'kubeconfig',
        help: "print the management API's admin kubeconfig (kubectl --kubeconfig <(capt dev kubeconfig) get clusters -A)",
        action: host.devKubeconfigCommand,
      },
      devMachineCommand(
        'break',
        'stop part of a local machine, for demos and tests',
        'stop its kubelet, a control-plane component or all of it (name one)',
        host.devBreakMachine,
      ),
      devMachineCommand(
        'repair',
        'undo `capt dev break`',
        'restart what was stopped (everything, without a flag)',
        host.devRepairMachine,
      ),
    ],
  },
  {
    name: 'codec',
    help: 'payload encryption keys',
    commands: [
      {
        name: 'key',
        help: 'payload encryption keys',
        commands: [
          {
            name: 'new',
            help: 'a key, written to CAPT_CODEC_KEY_FILE or $CAPT_HOME/codec-keys (never over one)',
            flags: ['id', 'print'],
            action: host.codecKeyNew,
          },
        ],
      },
    ],
  },
  {
    name: 'bridge',
    help: "serve Cluster API's objects in a management API: clusters applied there run here, their status is written back",
    flags: [
      'kubeconfig',
      'interval',
      'webhookPort',
      'webhookClientCa',
      'webhookSecret',
      'webhookListen',
      'insecureWebhookAnyCaller',
      ...temporalFlags,
    ],
    action: host.bridge,
  },
  {
    name: 'codec-server',
    help: 'decode payloads for the Web UI and `temporal --codec-endpoint`, for callers with its token',
    flags: ['port', 'listen', 'corsOrigin'],
    action: host.codecServer,
  },
  {
    name: 'worker',
    help: 'a worker in the foreground (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE); prints its build id',
    flags: ['serve', 'metricsAddress', 'maxCachedWorkflows', ...temporalFlags],
    action: host.worker,
    commands: [
      {
        name: 'status',
        help: 'each build of the workers: current or ramping, drainage, workflows still running on it',
        flags: ['output', ...temporalFlags],
        action: host.workerStatus,
      },
    ],
  },
  {
    name: 'upgrade',
    help: "move to a new build of capt's workers",
    commands: [
      {
        name: 'workers',
        help: 'make BUILD current (or ramp it), and move the owners to it',
        args: [{ name: 'BUILD', help: 'the build id (default: the newest one started)', optional: true }],
        flags: ['ramp', ...temporalFlags],
        action: host.upgradeWorkersCommand,
      },
    ],
  },
  {
    name: 'quickstart',
    help: 'dev start, apply examples/quickstart.yaml, wait, describe',
    flags: ['var', 'timeout'],
    action: host.quickstart,
  },
  {
    name: 'completion',
    help: 'a shell completion script: source <(capt completion bash), or zsh',
    args: [{ name: 'SHELL', help: 'the shell', choices: shells }],
    action: async ([shell]) => {
      process.stdout.write(completionScript(program(), shell as Shell));
      return 0;
    },
  },
];

const commandPath = (command: Command): string =>
  command.parent ? `${commandPath(command.parent)} ${command.name()}` : command.name();

/** Commander's own refusals (unknown flag or command, missing argument) as capt's bad input, naming where help is. */
function usageError(err: CommanderError, command: Command): UsageError {
  const message =
    err.code === 'commander.help'
      ? `${commandPath(command)} needs a command: ${command.commands.map((c) => c.name()).join(', ')}`
      : err.message
          .replace(/^error: /, '')
          .replace(/\n/g, ' ')
          .replace(/\.$/, '');
  return new UsageError(`${message}; run ${commandPath(command)} --help`);
}

function addCommand(parent: Command, spec: CommandSpec, ran: (code: number) => void): void {
  const command = parent.command(spec.name).description(spec.help).helpCommand(false);
  for (const a of spec.args ?? []) {
    const word = `${a.name}${a.variadic ? '...' : ''}`;
    const argument = new Argument(a.optional ? `[${word}]` : `<${word}>`, a.help);
    if (a.choices) argument.choices(a.choices);
    command.addArgument(argument);
  }
  for (const f of spec.flags ?? []) command.addOption(flagOption(f));
  if (spec.action) {
    const action = spec.action;
    command.action(async (...params: unknown[]) => {
      const values = command.opts<FlagValues>();
      for (const flag of temporalFlags) if (values[flag]) process.env[temporalFlagEnv[flag]] = values[flag];
      // A variadic argument arrives as an array: the action sees the words one by one.
      ran(await action(params.slice(0, spec.args?.length ?? 0).flat() as string[], values));
    });
  }
  for (const sub of spec.commands ?? []) addCommand(command, sub, ran);
}

/** `capt` as commander runs it; `ran` receives the exit code of the command that ran. */
export function program(ran: (code: number) => void = () => {}): Command {
  const root = new Command('capt')
    .description('Cluster API on Temporal')
    .addOption(flagOption('verbose'))
    .helpOption('-h, --help', 'this help')
    // `--help` is the one way to help: commander's `help` command takes one command, not a path like `rollout status`.
    .helpCommand(false)
    .configureHelp({ showGlobalOptions: true })
    .addHelpText(
      'after',
      '\n`capt COMMAND --help` lists its flags.\nExit codes: 0 success, 1 the operation failed, 2 bad input.',
    );
  for (const spec of commandTree) addCommand(root, spec, ran);
  const refuseAsUsage = (command: Command) => {
    command.exitOverride((err) => {
      if (err.code === 'commander.helpDisplayed') throw err;
      // `capt` alone shows what it can do, as a command line that does nothing: bad input.
      if (err.code === 'commander.help' && command === root) {
        root.outputHelp();
        throw new CommanderError(2, err.code, err.message);
      }
      throw usageError(err, command);
    });
    // main prints the errors, once; commander would print its own, and help after them.
    command.configureOutput({ outputError: () => {}, writeErr: () => {} });
    command.commands.forEach(refuseAsUsage);
  };
  refuseAsUsage(root);
  return root;
}
