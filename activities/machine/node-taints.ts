import type { V1Taint } from '@kubernetes/client-node';
import type { MachineTaint } from '../../src/contract/machine';

/** Cluster API's annotation on a Node naming the `Always` taints its machine put there (`key:effect,...`). */
export const taintsFromMachineAnnotation = 'cluster.x-k8s.io/taints-from-machine';
/** Cluster API's taint on a Node until its machine has initialized it (the bootstrap sets it at join). */
export const uninitializedTaint = 'node.cluster.x-k8s.io/uninitialized';

const taintId = (t: { key: string; effect: string }) => `${t.key}:${t.effect}`;

/**
 * A Node's taints once its machine's are applied, as Cluster API's machine controller applies them: the
 * uninitialized taint goes; every `Always` taint is there (its value as the machine has it); one the Node had
 * from the machine (`tracked`, the annotation's value) and the machine no longer has goes; `OnInitialization`
 * taints are added only while `initializing`, and one the machine moved from `Always` to `OnInitialization`
 * stays, no longer tracked. Taints others put on the Node stay. Returns the annotation's new value too.
 */
export function nodeTaints(
  current: V1Taint[],
  tracked: string | undefined,
  machine: MachineTaint[],
  initializing: boolean,
): { taints: V1Taint[]; tracked: string } {
  const ours = new Set((tracked ?? '').split(',').filter(Boolean));
  const wanted = new Set(machine.map(taintId));
  const byId = new Map(
    current
      .filter((t) => t.key !== uninitializedTaint && !(ours.has(taintId(t)) && !wanted.has(taintId(t))))
      .map((t) => [taintId(t), t]),
  );
  const always = machine.filter((t) => t.propagation === 'Always');
  const added = initializing ? machine : always;
  for (const t of added) byId.set(taintId(t), { key: t.key, effect: t.effect, ...(t.value ? { value: t.value } : {}) });
  return { taints: [...byId.values()], tracked: always.map(taintId).join(',') };
}
