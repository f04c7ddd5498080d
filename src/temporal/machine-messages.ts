import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { DrainProgress, MachineSpecChange, MachineStatus } from '../../workflows/machine/machine-model';

/** Messages of the machine workflow. Wire name = constant name without its suffix. */
export const machineStatusQuery = defineQuery<MachineStatus>('machineStatus');
/** Starts deletion; `clusterDeleting` skips drain, the volume wait and Node deletion, as Cluster API does. */
export const deleteMachineUpdate = defineUpdate<MachineStatus, [{ clusterDeleting?: boolean }]>('deleteMachine');
/** The same, from another workflow (workflows can signal but not update each other). */
export const requestMachineDeletionSignal = defineSignal<[{ clusterDeleting?: boolean }]>('requestMachineDeletion');
/** Labels, annotations and timeouts change in place; version, bootstrap, infrastructure and failure domain are refused. */
export const changeMachineUpdate = defineUpdate<MachineStatus, [MachineSpecChange]>('changeMachine');
/** The same, from the owning MachineDeployment (in-place fields of its template); a refused change is logged and dropped. */
export const changeMachineSignal = defineSignal<[MachineSpecChange]>('changeMachineRequested');
/** From the drain activity, only when what blocks the drain changes. */
export const drainProgressSignal = defineSignal<[DrainProgress]>('drainProgress');
/** To the owner, when the machine's phase changes. */
export const machineChangedSignal = defineSignal<[MachineStatus]>('machineChanged');
