import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ClusterModel } from '../api/model';
import type { ClusterStatus } from '../../workflows/cluster/cluster-status';
import type { OwnerStatus } from '../../workflows/shared/owner-status';
import type { ControlPlaneModel } from '../api/model';
import type { ControlPlaneRevision } from '../../workflows/control-plane/control-plane-revisions';

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
export const rolloutHistoryQuery = defineQuery<ControlPlaneRevision[]>('rolloutHistory');
/** Re-applies an earlier revision's template as a new revision; the previous one when no number is given. */
export const rolloutUndoUpdate = defineUpdate<OwnerStatus, [{ toRevision?: number }]>('rolloutUndo');
