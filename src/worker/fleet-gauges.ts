import type { MetricMeter } from '@temporalio/common';
import type { NativeConnection } from '@temporalio/worker';
import { MachinePhase } from '../contract/machine';

/**
 * The fleet at a glance, as gauges on the worker's metrics endpoint: machines by phase (all clusters, and per
 * cluster), and control planes and MachineDeployments by phase (Scaling: scaling or rolling out). Counted from
 * Temporal's visibility store (each workflow's CaptPhase), not from workflow code: a gauge a workflow set would stay
 * on the worker that last ran it after the workflow moved on. Every worker serving metrics exports the same
 * figures, so a dashboard takes their max. Visibility allows GROUP BY on ExecutionStatus only, so each figure is a
 * count query: 4 + 4 per cluster (at most `maxClusters`) + 6 every interval.
 */
export const machinePhases = [
  MachinePhase.Provisioning,
  MachinePhase.Running,
  MachinePhase.Deleting,
  MachinePhase.Failed,
];
const ownerKinds = ['KubeadmControlPlane', 'MachineDeployment'];
const ownerPhases = ['Scaling', 'Ready', 'Deleting'];

/** A cluster's names go into a query: anything but a Kubernetes name is skipped. */
const kubernetesName = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/** `CAPT_FLEET_GAUGES_SECONDS`: how often the gauges are counted again (default 30). */
export function fleetGaugeSeconds(value: string | undefined): number {
  if (value === undefined || value === '') return 30;
  const n = Number(value);
  if (!(n >= 1 && n <= 3600))
    throw new Error(`CAPT_FLEET_GAUGES_SECONDS ${value}: give the seconds between two counts, 1 to 3600`);
  return n;
}

export class FleetGauges {
  private readonly machines;
  private readonly clusterMachines;
  private readonly owners;
  /** Clusters counted last time: one gone is set to 0 (an exporter keeps a series at its last value). */
  private clusters = new Set<string>();

  constructor(
    private readonly connection: NativeConnection,
    private readonly namespace: string,
    meter: MetricMeter,
    private readonly maxClusters = 200,
  ) {
    this.machines = meter.createGauge('capt_machines', 'int', 'machines', 'running machine workflows by phase');
    this.clusterMachines = meter.createGauge(
      'capt_cluster_machines',
      'int',
      'machines',
      "a cluster's running machine workflows by phase",
    );
    this.owners = meter.createGauge(
      'capt_owners',
      'int',
      'owners',
      'control planes and MachineDeployments by kind and phase (Scaling: scaling or rolling out)',
    );
  }

  private async count(query: string): Promise<number> {
    const { count } = await this.connection.workflowService.countWorkflowExecutions({
      namespace: this.namespace,
      query: `${query} AND ExecutionStatus = "Running"`,
    });
    return Number(count ?? 0);
  }

  /** Counts every figure once and sets the gauges. */
  async collect(): Promise<void> {
    const machine = (phase: string) => `CaptKind = "Machine" AND CaptPhase = "${phase}"`;
    for (const phase of machinePhases) this.machines.set(await this.count(machine(phase)), { phase });
    for (const kind of ownerKinds)
      for (const phase of ownerPhases)
        this.owners.set(await this.count(`CaptKind = "${kind}" AND CaptPhase = "${phase}"`), { kind, phase });
    const { executions } = await this.connection.workflowService.listWorkflowExecutions({
      namespace: this.namespace,
      query: 'CaptKind = "Cluster" AND ExecutionStatus = "Running"',
      pageSize: this.maxClusters,
    });
    const now = new Set<string>();
    for (const e of executions ?? []) {
      // cluster/<namespace>/<name>: both names are Kubernetes names, so neither holds a slash or a quote.
      const [, namespace, cluster] = (e.execution?.workflowId ?? '').split('/');
      if (!namespace || !cluster || ![namespace, cluster].every((n) => kubernetesName.test(n))) continue;
      now.add(`${namespace}/${cluster}`);
      const where = `CaptNamespace = "${namespace}" AND CaptCluster = "${cluster}"`;
      for (const phase of machinePhases)
        this.clusterMachines.set(await this.count(`${where} AND ${machine(phase)}`), { namespace, cluster, phase });
    }
    for (const gone of [...this.clusters].filter((c) => !now.has(c))) {
      const [namespace, cluster] = gone.split('/') as [string, string];
      for (const phase of machinePhases) this.clusterMachines.set(0, { namespace, cluster, phase });
    }
    this.clusters = now;
  }

  /** Counts every `seconds` until `stopped` resolves; a failed count is retried at the next interval. */
  async run(seconds: number, stopped: Promise<unknown>, onError: (err: unknown) => void): Promise<void> {
    let done = false;
    void stopped.finally(() => (done = true));
    while (!done) {
      await this.collect().catch(onError);
      await Promise.race([new Promise((r) => setTimeout(r, seconds * 1000).unref()), stopped.catch(() => undefined)]);
    }
  }
}
