import { getExternalWorkflowHandle } from '@temporalio/workflow';
import type { MachineTemplateChange } from '../../src/contract/machine';
import { machineTemplateChangedSignal } from '../../src/contract/machine-messages';
import { machineWorkflowId } from '../../src/contract/workflow-ids';

/** What an owner changes on its running machines without replacing them, as Cluster API propagates it. */
export type InPlaceFields = MachineTemplateChange['next'];

/** Signals one workflow task sends at most when it tells every machine. */
const signalsPerTask = 200;

const inPlaceFields = (t: InPlaceFields): InPlaceFields => ({
  labels: t.labels,
  annotations: t.annotations,
  nodeDrainTimeoutSeconds: t.nodeDrainTimeoutSeconds,
  nodeVolumeDetachTimeoutSeconds: t.nodeVolumeDetachTimeoutSeconds,
  nodeDeletionTimeoutSeconds: t.nodeDeletionTimeoutSeconds,
  // Absent from templates written before taints were carried: such a change compares as it did then.
  ...(t.taints ? { taints: t.taints } : {}),
});

/** The change that takes a machine made with `before` to `after`: the old keys go, the new ones come. */
export const templateChange = (before: InPlaceFields, after: InPlaceFields): MachineTemplateChange => ({
  previous: { labels: before.labels, annotations: before.annotations },
  next: inPlaceFields(after),
});

/**
 * The change still to pass on once the template went from `before` to `after`: `pending` as it was when no
 * in-place field differs. Changes not yet passed on fold into one, since the machines still carry the first
 * one's previous keys.
 */
export function pendingTemplateChange(
  before: InPlaceFields,
  after: InPlaceFields,
  pending: MachineTemplateChange | undefined,
): MachineTemplateChange | undefined {
  if (JSON.stringify(inPlaceFields(before)) === JSON.stringify(inPlaceFields(after))) return pending;
  const change = templateChange(before, after);
  return pending ? { ...change, previous: pending.previous } : change;
}

/** Passes `change` to the machines named, signalsPerTask per workflow task; a machine already gone is no matter. */
export async function sendTemplateChange(
  namespace: string,
  machines: string[],
  change: MachineTemplateChange,
): Promise<void> {
  for (let i = 0; i < machines.length; i += signalsPerTask)
    await Promise.all(
      machines.slice(i, i + signalsPerTask).map((name) =>
        getExternalWorkflowHandle(machineWorkflowId(namespace, name))
          .signal(machineTemplateChangedSignal, change)
          .catch(() => undefined),
      ),
    );
}
