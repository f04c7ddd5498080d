import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ClusterModel } from '../api/model';
import type { ClusterStatus } from '../../workflows/cluster/cluster-status';
import type { OwnerStatus } from '../../workflows/shared/owner-status';
import type { ControlPlaneModel, MachineDeploymentModel } from '../api/model';
import type { Revision } from '../../workflows/shared/revisions';

/** Messages of the cluster, control-plane and MachineDeployment workflows. Wire name = constant name without its suffix. */
export const clusterStatusQuery = defineQuery<ClusterStatus>('clusterStatus');
/** `capt apply` on an existing cluster: validated, then passed to the children. */
export const applyClusterUpdate = defineUpdate<ClusterStatus, [ClusterModel]>('applyCluster');
export const deleteClusterUpdate = defineUpdate<ClusterStatus, []>('deleteCluster');

export const ownerStatusQuery = defineQuery<OwnerStatus>('ownerStatus');
/** Scale a control plane or MachineDeployment; the validator refuses counts the kind cannot take. */
export const scaleUpdate = defineUpdate<OwnerStatus, [number]>('scale');
/** From the cluster to a child: scale (no reply needed between workflows). */
export const scaleSignal = defineSignal<[number]>('scaleRequested');
/** From the cluster to a child: delete every machine, then finish. */
export const deleteOwnerSignal = defineSignal<[{ clusterDeleting: boolean }]>('deleteOwner');
/** From a child to its cluster, whenever its status changes. */
export const childChangedSignal = defineSignal<[OwnerStatus]>('childChanged');
/** From the cluster to its control plane: a new machine template (version, kubeadm config, infrastructure). */
export const controlPlaneSpecSignal = defineSignal<[{ spec: ControlPlaneModel; cause: string }]>('controlPlaneSpec');
/** From the cluster to a MachineDeployment: its new spec (template, strategy, in-place fields); replicas travel by scaleSignal. */
export const machineDeploymentSpecSignal = defineSignal<[{ spec: MachineDeploymentModel; cause: string }]>('machineDeploymentSpec');

/** Rollout operations, answered alike by the control plane and MachineDeployments. */
export const rolloutHistoryQuery = defineQuery<Revision[]>('rolloutHistory');
/** Re-applies an earlier revision's template as a new revision; the previous one when no number is given. */
export const rolloutUndoUpdate = defineUpdate<OwnerStatus, [{ toRevision?: number }]>('rolloutUndo');
/** Pause (true) stops replacing machines while scaling still applies; resume (false) goes on. */
export const rolloutPauseUpdate = defineUpdate<OwnerStatus, [{ paused: boolean }]>('rolloutPause');
/** Replaces every machine with a new one of the same template (rolloutAfter = now). */
export const rolloutRestartUpdate = defineUpdate<OwnerStatus, []>('rolloutRestart');
