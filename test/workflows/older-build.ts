import { condition, defineQuery, setHandler } from '@temporalio/workflow';
import { MachinePhase, type MachineStatus } from '../../src/contract/machine';
import { machineStatusQuery } from '../../src/contract/machine-messages';
import type { UnknownSignal } from '../../src/contract/unknown-signals';
import { recordUnknownSignals, unknownSignalsField } from '../../workflows/shared/unknown-signals';

/** What the older build's machine keeps of the signals it has no handler for. */
export const unknownSignalsQuery = defineQuery<{ unknownSignals?: UnknownSignal[] }>('unknownSignals');

/**
 * A machine workflow as a build from before `deleteMachine` existed would run it: it answers its status,
 * knows no update, and keeps unknown signals as every capt workflow does. Runs until it is terminated.
 */
export async function olderBuildMachineWorkflow(name: string): Promise<void> {
  const kept: UnknownSignal[] = [];
  const status: MachineStatus = {
    namespace: 'default',
    name,
    cluster: 'older',
    phase: MachinePhase.Running,
    version: 'v1.36.3',
    addresses: [],
    createdAt: new Date().toISOString(),
    conditions: [],
    step: 'running',
    stepReason: 'Running',
    labels: {},
    annotations: {},
    sequence: 0,
  };
  setHandler(machineStatusQuery, () => status);
  setHandler(unknownSignalsQuery, () => unknownSignalsField(kept));
  recordUnknownSignals(kept, () => undefined);
  await condition(() => false);
}
