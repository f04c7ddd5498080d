import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadManifests, loadManifestsWithTopologies } from '../api/load-manifests';
import { manifestVariables, substituteVariables } from '../api/variables';
import { CaptClient, failedMachines, NotFoundError, RejectedError, type OwnerKind } from '../client/capt-client';
import { parseAnnotationArgs } from '../client/machine-annotations';
import type { ClusterView } from '../contract/cluster';
import { availableKubernetesVersions, kubectlFor } from '../tools';
import { terminalSafe } from '../util/terminal-text';
import { appliedText } from './apply-text';
import { ResourceSets } from '../client/resource-sets';
import { appliedAddonText, resourceSetsTable, resourceSetText } from './resource-set-text';
import type { FlagValues } from './flags';
import { controlPlaneMachineCount } from './flavors';
import { healthTable, healthText } from './health-text';
import { readSources, UsageError } from './read-sources';
import {
  age,
  clustersTable,
  describeTree,
  formatOutput,
  listedMachines,
  certificatesTable,
  machinesTable,
  ownersTable,
  table,
} from './render';
import { repairText } from './repair-text';
import { rolloutStatusText } from './rollout-status';

/** A command's action: its positional arguments and flags in, its exit code out. */
export type Action = (args: string[], values: FlagValues) => Promise<number>;

export const repoRoot = join(__dirname, '../../..');

/** Everything shown goes through terminalSafe: conditions, events and outputs come from clusters and machines. */
export const out = (text: string) => process.stdout.write(`${terminalSafe(text)}\n`);

export function durationMs(text: string): number {
  const m = /^(\d+)(s|m|h)$/.exec(text);
  if (!m) throw new UsageError(`--timeout ${text}: write it like 90s, 15m or 1h`);
  return Number(m[1]) * { s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 's' | 'm' | 'h'];
}

export async function withClient<T>(fn: (client: CaptClient) => Promise<T>): Promise<T> {
  const client = await CaptClient.connect();
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}

/** The Kubernetes versions this host's local provider can run; undefined on a host without capt's tools (a remote CLI), where the provider refuses them later. */
export function localKubernetesVersions(): string[] | undefined {
  try {
    return availableKubernetesVersions();
  } catch {
    return undefined;
  }
}

/** Progress: one rewritten line on a terminal, a line per change otherwise. Ctrl-C stops only the waiting. */
export function progressPrinter(): (s: ClusterView) => void {
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

export function endProgress(): void {
  if (process.stdout.isTTY) process.stdout.write('\n');
}

/** The describe tree, with the listed machines' details read from their own workflows. */
export async function describeCluster(client: CaptClient, view: ClusterView, allConditions: boolean): Promise<string> {
  const names = [view.controlPlane, ...view.machineDeployments].flatMap((o) =>
    o ? listedMachines(o).map((m) => m.name) : [],
  );
  return describeTree(view, allConditions, await client.machineStatuses(view.namespace, names));
}

export const apply: Action = async (_, values) => {
  if (!values.filename?.length) throw new UsageError('apply needs -f FILE|DIR|-');
  const dryRun = !!values.dryRun;
  if (dryRun && values.wait)
    throw new UsageError(
      '--wait with --dry-run: a dry run changes nothing, so there is nothing to wait for; drop one of them',
    );
  const kubernetesVersions = localKubernetesVersions();
  const { clusters: models, addons } = loadManifestsWithTopologies(
    readSources(values.filename),
    manifestVariables(process.env, values.var ?? []),
    kubernetesVersions,
  );
  return withClient(async (client) => {
    // Clusters first: a set applied with them then finds them at its first pass.
    for (const r of await client.apply(models, { dryRun, kubernetesVersions })) out(appliedText(r, dryRun));
    for (const r of await new ResourceSets(client.client).apply(addons, { dryRun })) out(appliedAddonText(r, dryRun));
    if (!values.wait) return 0;
    const timeout = durationMs(values.timeout!);
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
};

/** What `capt get` lists, by every name it takes for it. */
export const listedKinds = {
  clusters: 'Cluster',
  cluster: 'Cluster',
  machines: 'Machine',
  machine: 'Machine',
  machinedeployments: 'MachineDeployment',
  machinedeployment: 'MachineDeployment',
  md: 'MachineDeployment',
  kubeadmcontrolplanes: 'KubeadmControlPlane',
  kubeadmcontrolplane: 'KubeadmControlPlane',
  kcp: 'KubeadmControlPlane',
  certificates: 'Certificate',
  certificate: 'Certificate',
  certs: 'Certificate',
  clusterresourcesets: 'ClusterResourceSet',
  clusterresourceset: 'ClusterResourceSet',
  crs: 'ClusterResourceSet',
} as const;

export const get: Action = ([what], values) => {
  const kind = listedKinds[what as keyof typeof listedKinds];
  const all = values.allNamespaces ? undefined : values.namespace;
  const format = values.output ?? 'table';
  const wide = format === 'wide';
  const structured = format === 'json' || format === 'yaml';
  return withClient(async (client) => {
    if (kind === 'Cluster') {
      const items = await client.listClusters(all);
      out(structured ? formatOutput({ items }, format) : clustersTable(items, wide));
    } else if (kind === 'Certificate') {
      const items = await client.certificates(all);
      out(structured ? formatOutput({ items }, format) : certificatesTable(items, wide));
    } else if (kind === 'ClusterResourceSet') {
      const items = await new ResourceSets(client.client).list(all);
      out(structured ? formatOutput({ items }, format) : resourceSetsTable(items));
    } else if (kind === 'Machine') {
      const items = await client.listMachines(all);
      out(structured ? formatOutput({ items }, format) : machinesTable(items, wide));
    } else {
      const items = await client.listOwners(kind, all);
      out(structured ? formatOutput({ items }, format) : ownersTable(items));
    }
    return 0;
  });
};

export const describeClusterCommand: Action = ([name], values) =>
  withClient(async (client) => {
    out(
      await describeCluster(
        client,
        await client.clusterStatus(values.namespace!, name!),
        values.showConditions === 'all',
      ),
    );
    return 0;
  });

export const deleteCluster: Action = ([name], values) => {
  const ns = values.namespace!;
  return withClient(async (client) => {
    await client.clusterStatus(ns, name!);
    await client.deleteCluster(ns, name!);
    out(`cluster.cluster.x-k8s.io/${name} deleting`);
    if (values.wait) {
      await client.waitForDeletion(ns, name!, progressPrinter(), durationMs(values.timeout!));
      endProgress();
      out(`cluster.cluster.x-k8s.io/${name} deleted`);
    }
    return 0;
  });
};

export const describeResourceSet: Action = ([name], values) =>
  withClient(async (client) => {
    const status = await new ResourceSets(client.client).status(values.namespace!, name!);
    if (!status) throw new NotFoundError(`clusterresourceset ${values.namespace}/${name} not found`);
    out(resourceSetText(status));
    return 0;
  });

export const deleteResourceSet: Action = ([name], values) =>
  withClient(async (client) => {
    await new ResourceSets(client.client).delete(values.namespace!, name!);
    out(`clusterresourceset.addons.cluster.x-k8s.io/${name} deleted (what it applied stays in the clusters)`);
    return 0;
  });

export const deleteMachine: Action = ([name], values) =>
  withClient(async (client) => {
    await client.deleteMachine(values.namespace!, name!);
    out(`machine.cluster.x-k8s.io/${name} deleting`);
    return 0;
  });

export const annotateMachine: Action = ([name, ...args], values) => {
  const change = parseAnnotationArgs(args, (message) => new UsageError(`annotate machine ${name}: ${message}`));
  return withClient(async (client) => {
    await client.annotateMachine(values.namespace!, name!, change);
    out(`machine.cluster.x-k8s.io/${name} annotated`);
    return 0;
  });
};

export const repairCluster: Action = ([name], values) =>
  withClient(async (client) => {
    const report = await client.repairCluster(values.namespace!, name!, { dryRun: values.dryRun });
    const adopted = report.dryRun ? [] : await client.waitForAdoption(report, durationMs(values.timeout!));
    out(repairText(report, adopted));
    return 0;
  });

export const kubeconfig: Action = ([name], values) =>
  withClient(async (client) => {
    const ns = values.namespace!;
    process.stdout.write(await client.kubeconfig(ns, name!));
    // On stderr, so `capt kubeconfig NAME > file` stays a clean kubeconfig.
    process.stderr.write(
      `# kubectl for this cluster's Kubernetes: ${kubectlFor((await client.clusterStatus(ns, name!)).version)}\n`,
    );
    return 0;
  });

/** The owner kinds scale and rollout act on, by every name they take for them. */
export const ownerKinds = {
  machinedeployment: 'machinedeployment',
  md: 'machinedeployment',
  kubeadmcontrolplane: 'kubeadmcontrolplane',
  kcp: 'kubeadmcontrolplane',
} as const satisfies Record<string, OwnerKind>;

export const scale: Action = ([kindWord, name], values) => {
  const kind = ownerKinds[kindWord as keyof typeof ownerKinds];
  const replicas = Number(values.replicas);
  if (values.replicas === undefined || !Number.isInteger(replicas) || replicas < 0)
    throw new UsageError(`--replicas ${values.replicas ?? ''}: expected a whole number >= 0`);
  return withClient(async (client) => {
    const status = await client.scale(kind, values.namespace!, name!, replicas);
    out(`${kind}/${name} scaled to ${status.replicas}`);
    return values.wait ? rolloutStatus(client, kind, values.namespace!, name!, true, durationMs(values.timeout!)) : 0;
  });
};

/** Prints the rollout's state; with `watch`, again on every change until it completes. */
export async function rolloutStatus(
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

interface RolloutTarget {
  kind: OwnerKind;
  name: string;
  /** `kind/name` as capt prints it. */
  ref: string;
  ns: string;
}

/** A rollout subcommand's action on its `machinedeployment/NAME` or `kubeadmcontrolplane/NAME` (md/, kcp/ alike). */
const rolloutAction =
  (act: (client: CaptClient, target: RolloutTarget, values: FlagValues, text: string) => Promise<number>): Action =>
  ([text], values) => {
    const [kindWord, name] = text!.split('/');
    const kind = ownerKinds[kindWord as keyof typeof ownerKinds];
    if (!kind || !name)
      throw new UsageError(`${text}: expected machinedeployment/NAME or kubeadmcontrolplane/NAME (md/NAME, kcp/NAME)`);
    return withClient((client) =>
      act(client, { kind, name, ref: `${kind}/${name}`, ns: values.namespace! }, values, text!),
    );
  };

const revisionFlag = (flag: '--to-revision' | '--revision', value: string | undefined, target: string) => {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value))
    throw new UsageError(`${flag} ${value}: expected a revision number (see capt rollout history ${target})`);
  return Number(value);
};

export const rolloutStatusCommand = rolloutAction((client, { kind, ns, name }, values) =>
  rolloutStatus(client, kind, ns, name, !!values.watch, durationMs(values.timeout!)),
);

export const rolloutHistory = rolloutAction(async (client, { kind, ns, name, ref }, values, text) => {
  const revisions = await client.rolloutHistory(kind, ns, name);
  const only = revisionFlag('--revision', values.revision, text);
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
  return 0;
});

export const rolloutUndo = rolloutAction(async (client, { kind, ns, name, ref }, values, text) => {
  const status = await client.rolloutUndo(kind, ns, name, revisionFlag('--to-revision', values.toRevision, text));
  out(`${ref} rolled back: revision ${status.revision}, ${status.version}`);
  return values.wait ? rolloutStatus(client, kind, ns, name, true, durationMs(values.timeout!)) : 0;
});

const rolloutPauseOrResume = (pause: boolean) =>
  rolloutAction(async (client, { kind, ns, name, ref }) => {
    await client.rolloutPause(kind, ns, name, pause);
    out(`${ref} ${pause ? 'paused' : 'resumed'}`);
    return 0;
  });
export const rolloutPause = rolloutPauseOrResume(true);
export const rolloutResume = rolloutPauseOrResume(false);

export const rolloutRestart = rolloutAction(async (client, { kind, ns, name, ref }, values) => {
  const status = await client.rolloutRestart(kind, ns, name);
  out(`${ref} restarted: revision ${status.revision}`);
  return values.wait ? rolloutStatus(client, kind, ns, name, true, durationMs(values.timeout!)) : 0;
});

const structuredOutput = (values: FlagValues) =>
  values.output === 'json' || values.output === 'yaml' ? values.output : undefined;

export const healthCluster: Action = ([name], values) =>
  withClient(async (client) => {
    const health = await client.clusterHealth(values.namespace!, name!);
    const structured = structuredOutput(values);
    out(structured ? formatOutput(health, structured) : healthText(health));
    return health.healthy ? 0 : 1;
  });

export const healthClusters: Action = (_, values) =>
  withClient(async (client) => {
    const items = await client.clustersHealth(values.allNamespaces ? undefined : values.namespace);
    const structured = structuredOutput(values);
    out(structured ? formatOutput({ items }, structured) : healthTable(items));
    return items.every((i) => i.health?.healthy) ? 0 : 1;
  });

export const generateCluster: Action = async ([name], values) => {
  const vars = {
    CLUSTER_NAME: name!,
    KUBERNETES_VERSION: values.kubernetesVersion ?? availableKubernetesVersions().at(-1)!,
    CONTROL_PLANE_MACHINE_COUNT: controlPlaneMachineCount(values.flavor, values.controlPlaneMachineCount),
    WORKER_MACHINE_COUNT: values.workerMachineCount!,
  };
  const template = readFileSync(join(repoRoot, 'examples/quickstart.yaml'), 'utf8');
  loadManifests([{ file: `generated cluster ${name}`, text: template }], vars);
  out(substituteVariables(template, vars).text.trimEnd());
  return 0;
};
