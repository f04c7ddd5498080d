import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { DrainProgress, MachineSpecChange, NodeHealth, MachineStatus, MachineTemplateChange } from './machine';
import type { InPlaceUpdateRequest } from './in-place';

/** Messages of the machine workflow. Wire name = constant name without its suffix. */
export const machineStatusQuery = defineQuery<MachineStatus>('machineStatus');
/**
 * The memo key under which a machine keeps its status as of its last report (encrypted like every payload):
 * read with a describe, which the server answers without the machine's worker, as a query is not.
 */
export const reportedStatusMemo = 'reportedStatus';
/** Starts deletion; `clusterDeleting` skips drain, the volume wait and Node deletion, as Cluster API does. */
export const deleteMachineUpdate = defineUpdate<MachineStatus, [{ clusterDeleting?: boolean }]>('deleteMachine');
/** The same, from the owner (workflows can signal but not update each other); the owner already counts it as deleting. */
export const requestMachineDeletionSignal = defineSignal<[{ clusterDeleting?: boolean }]>('requestMachineDeletion');
/** Labels, annotations and timeouts change in place; version, bootstrap, infrastructure and failure domain are refused. */
export const changeMachineUpdate = defineUpdate<MachineStatus, [MachineSpecChange]>('changeMachine');
/**
 * From the owning MachineDeployment (through an activity): take a newer version where the machine runs. Accepted
 * only while it runs and is not being deleted; asking again for the same version is accepted and changes nothing.
 */
export const updateInPlaceUpdate = defineUpdate<MachineStatus, [InPlaceUpdateRequest]>('updateInPlace');
/** From the owning MachineDeployment: its template's in-place fields changed; the machine merges them into its own. */
export const machineTemplateChangedSignal = defineSignal<[MachineTemplateChange]>('machineTemplateChanged');
/** From the cluster's Node watch, only when the machine's Node's health changes (see NodeHealth). */
export const nodeHealthSignal = defineSignal<[NodeHealth]>('nodeHealth');
/** From the drain activity, only when what blocks the drain changes. */
export const drainProgressSignal = defineSignal<[DrainProgress]>('drainProgress');
