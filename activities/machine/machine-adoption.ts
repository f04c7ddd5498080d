import {
  coarsePhase,
  deleteMachineAnnotation,
  MachinePhase,
  remediateMachineAnnotation,
  skipRemediationAnnotation,
  type MachineStatus,
} from '../../src/contract/machine';
import type { MachineRecord, OwnerRef } from '../../src/contract/owner';

/**
 * How a rebuilt owner recognises the machines its lost workflow left, from what each machine keeps of
 * itself: the owner labels every machine carries (Cluster API's names) and the memo its start wrote.
 * Pure, so the rules are tested without a server.
 */

/** What a machine's start records in its workflow's memo (a type, not an interface: a memo is a plain record). */
export type MachineStartMemo = {
  batch?: string;
  /** The owner's template hash the machine was made from (machines started before it was kept have none). */
  templateHash?: string;
};

/** The owner a machine's labels name; undefined for a cluster's standalone machines. */
export function labelledOwner(labels: Record<string, string>): OwnerRef | undefined {
  const deployment = labels['cluster.x-k8s.io/deployment-name'];
  if (deployment) return { kind: 'MachineDeployment', name: deployment };
  const controlPlane = labels['cluster.x-k8s.io/control-plane-name'];
  if (controlPlane) return { kind: 'KubeadmControlPlane', name: controlPlane };
  return undefined;
}

/**
 * The template hash of an adopted machine: its memo's; else, on a MachineDeployment's machine, its
 * MachineSet's (the set name is `<deployment>-<hash>`); else none, and the owner's rollout replaces it.
 */
export function adoptedTemplateHash(
  owner: OwnerRef,
  labels: Record<string, string>,
  memo: MachineStartMemo | undefined,
): string {
  if (memo?.templateHash) return memo.templateHash;
  const set = labels['cluster.x-k8s.io/set-name'];
  return owner.kind === 'MachineDeployment' && set?.startsWith(`${owner.name}-`)
    ? set.slice(owner.name.length + 1)
    : '';
}

/**
 * The compact record `owner` keeps of a machine it adopts, from the machine's status at `now`; undefined
 * when the machine is another owner's or already deleted. Running counts from adoption: minReadySeconds
 * starts over, so a rebuilt owner never counts a machine available sooner than its lost one would have.
 */
export function adoptedRecord(
  owner: OwnerRef,
  status: MachineStatus,
  memo: MachineStartMemo | undefined,
  now: string,
): MachineRecord | undefined {
  const labelled = labelledOwner(status.labels);
  if (labelled?.kind !== owner.kind || labelled.name !== owner.name || status.phase === MachinePhase.Deleted)
    return undefined;
  const phase = coarsePhase(status.phase);
  const address = status.addresses[0];
  return {
    name: status.name,
    templateHash: adoptedTemplateHash(owner, status.labels, memo),
    version: status.version,
    createdAt: status.createdAt,
    phase,
    ...(address ? { address } : {}),
    deleting: phase === MachinePhase.Deleting,
    marked: deleteMachineAnnotation in status.annotations,
    ...(remediateMachineAnnotation in status.annotations ? { remediate: true } : {}),
    ...(skipRemediationAnnotation in status.annotations ? { skipRemediation: true } : {}),
    ...(phase === MachinePhase.Running ? { runningSince: now } : {}),
    sequence: status.sequence,
  };
}
