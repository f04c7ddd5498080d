import type { ClusterModel } from '../../src/api/model';
import type { RunningTemplates } from '../../src/contract/cluster';
import { templateHash } from '../control-plane/control-plane-revisions';
import { machineTemplateHash } from '../machine-deployment/machine-sets';

export type ApplyOutcome = 'created' | 'configured' | 'unchanged';

/** What an owner must be told about one object of the new model. */
export interface OwnerChange {
  name: string;
  outcome: ApplyOutcome;
  /** Its spec or template changed, or the running template is not the manifest's (after an undo): send the spec. */
  spec: boolean;
  /** Its replicas changed: send a scale. */
  scale: boolean;
}

export interface ClusterDiff {
  /** The Cluster object itself (everything but its control plane and MachineDeployments). */
  cluster: ApplyOutcome;
  controlPlane: OwnerChange;
  machineDeployments: OwnerChange[];
  /** MachineDeployments the new model no longer has: they are deleted. */
  removed: string[];
  /** Standalone Machines: new, changed in place (labels, annotations, timeouts), or as they were. */
  machines: { name: string; outcome: ApplyOutcome }[];
  /** Standalone Machines the new model no longer has: they are deleted. */
  removedMachines: string[];
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

function ownerChange<T extends { name: string; replicas: number }>(
  previous: T | undefined,
  next: T,
  hashOf: (x: T) => string,
  running: string | undefined,
): OwnerChange {
  if (!previous) return { name: next.name, outcome: 'created', spec: false, scale: false };
  const spec =
    !same({ ...previous, replicas: 0 }, { ...next, replicas: 0 }) || hashOf(next) !== (running ?? hashOf(previous));
  const scale = previous.replicas !== next.replicas;
  return { name: next.name, outcome: spec || scale ? 'configured' : 'unchanged', spec, scale };
}

/**
 * The one diff of a cluster's desired state against the running one: the cluster workflow's apply handler
 * sends what it says, and `capt apply` prints its per-object outcomes, so the two cannot disagree.
 */
export function diffClusterModels(previous: ClusterModel, next: ClusterModel, running: RunningTemplates): ClusterDiff {
  const { controlPlane: _pc, machineDeployments: _pm, machines: before = [], ...previousCluster } = previous;
  const { controlPlane: _nc, machineDeployments: _nm, machines: after = [], ...nextCluster } = next;
  return {
    cluster: same(previousCluster, nextCluster) ? 'unchanged' : 'configured',
    controlPlane: ownerChange(previous.controlPlane, next.controlPlane, templateHash, running.controlPlane),
    machineDeployments: next.machineDeployments.map((md) =>
      ownerChange(
        previous.machineDeployments.find((m) => m.name === md.name),
        md,
        (x) => machineTemplateHash(x.template),
        running.machineDeployments[md.name],
      ),
    ),
    removed: previous.machineDeployments
      .filter((m) => !next.machineDeployments.some((n) => n.name === m.name))
      .map((m) => m.name),
    machines: after.map((m) => {
      const was = before.find((b) => b.name === m.name);
      return { name: m.name, outcome: !was ? 'created' : same(was, m) ? 'unchanged' : 'configured' };
    }),
    removedMachines: before.filter((m) => !after.some((n) => n.name === m.name)).map((m) => m.name),
  };
}

/** A cluster that does not exist yet: every object is created. */
export function creationDiff(next: ClusterModel): ClusterDiff {
  const created = (name: string): OwnerChange => ({ name, outcome: 'created', spec: false, scale: false });
  return {
    cluster: 'created',
    controlPlane: created(next.controlPlane.name),
    machineDeployments: next.machineDeployments.map((md) => created(md.name)),
    removed: [],
    machines: (next.machines ?? []).map((m) => ({ name: m.name, outcome: 'created' })),
    removedMachines: [],
  };
}
