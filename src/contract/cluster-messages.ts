import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ClusterModel, ControlPlaneModel, MachineDeploymentModel } from '../api/model';
import type { AdminCredentials, ClusterStatus, RunningTemplates } from './cluster';
import type { ClusterSecretsAnswer } from './cluster-secrets';
import type { MachineReport } from './machine';
import type { MachineRecord, OwnerStatus, OwnerSummary, Revision } from './owner';
import type { RepairReport } from './owner-recovery';
import type { OwnerStatusPageRequest } from './owner-status-page';

/** Messages of the cluster, control-plane and MachineDeployment workflows. Wire name = constant name without its suffix. */
export const clusterStatusQuery = defineQuery<ClusterStatus>('clusterStatus');
/** The last applied model and the templates running: what `capt apply` diffs a new manifest against. */
export const appliedModelQuery = defineQuery<{ model: ClusterModel; running: RunningTemplates }>('appliedModel');
/** `capt apply` on an existing cluster: validated, then passed to the children. */
export const applyClusterUpdate = defineUpdate<ClusterStatus, [ClusterModel]>('applyCluster');
export const deleteClusterUpdate = defineUpdate<ClusterStatus, []>('deleteCluster');
/** `capt repair cluster`: checks every owner's workflow and rebuilds the lost ones (none with dryRun). */
export const repairClusterUpdate = defineUpdate<RepairReport, [{ dryRun: boolean }]>('repairCluster');
/** `capt kubeconfig`: an admin certificate for the client's public key (PEM); the private key never travels. */
/**
 * The cluster's secrets, for capt's workers only (activities resolve them through this query); undefined
 * until they are created. No other query, status or detail carries them.
 */
export const clusterSecretsQuery = defineQuery<ClusterSecretsAnswer | undefined>('clusterSecrets');
export const issueKubeconfigUpdate = defineUpdate<AdminCredentials, [{ publicKey: string }]>('issueKubeconfig');

/**
 * An owner's status with one page of its machine records (owner-status-page.ts). Without a page it answers
 * every record, as owners answered clients of earlier builds; this build's clients always ask for pages.
 */
export const ownerStatusQuery = defineQuery<OwnerStatus, [OwnerStatusPageRequest?]>('ownerStatus');
/** One compact record, without the whole list (a machine's owner answers it at any size). */
export const ownerMachineQuery = defineQuery<MachineRecord | undefined, [string]>('ownerMachine');
/**
 * Scale a control plane or MachineDeployment; the validator refuses counts the kind cannot take. This and the
 * rollout updates answer the status without records (`machinesTotal` says how many): an update's answer is
 * kept in history, so it must not grow with the owner.
 */
export const scaleUpdate = defineUpdate<OwnerStatus, [number]>('scale');
/** From the cluster to a child: scale (no reply needed between workflows). */
export const scaleSignal = defineSignal<[{ replicas: number; generation: number }]>('scaleRequested');
/** From the cluster to a child: delete every machine, then finish. */
export const deleteOwnerSignal = defineSignal<[{ clusterDeleting: boolean }]>('deleteOwner');
/** From the cluster to its owners: paused (Cluster spec.paused or the paused annotation) or not; a paused owner creates, deletes and remediates nothing. */
export const clusterPausedSignal = defineSignal<[{ paused: boolean }]>('clusterPaused');
/** From a child to its cluster, only when its summary changes. */
export const childChangedSignal = defineSignal<[OwnerSummary]>('childChanged');
/** From a machine to its owner, only when a field the owner plans with changes. */
export const machineReportSignal = defineSignal<[MachineReport]>('machineReport');
/**
 * From machines to their owner, several at once (activities/machine/machine-reports.ts), to machines whose spec
 * says batchedReports: owners from before it know machineReport only.
 */
export const machineReportsSignal = defineSignal<[MachineReport[]]>('machineReports');
/**
 * The same batches as an update, to machines whose spec says reportsByUpdate. An update waiting for the owner's next
 * task writes nothing to its history, so the owner continues as new while reports keep coming: the server hands the
 * waiting ones to its next run. A signal meanwhile failed that task, and at 5,000 machines the owner never moved again.
 */
export const machineReportsUpdate = defineUpdate<void, [MachineReport[]]>('machineReports');
/** From the cluster to its control plane: a new machine template (version, kubeadm config, infrastructure). */
export const controlPlaneSpecSignal =
  defineSignal<[{ spec: ControlPlaneModel; cause: string; generation: number }]>('controlPlaneSpec');
/** From the cluster to a MachineDeployment: its new spec (template, strategy, in-place fields); replicas travel by scaleSignal. */
export const machineDeploymentSpecSignal =
  defineSignal<[{ spec: MachineDeploymentModel; cause: string; generation: number }]>('machineDeploymentSpec');

/** Rollout operations, answered alike by the control plane and MachineDeployments. */
export const rolloutHistoryQuery = defineQuery<Revision[]>('rolloutHistory');
/** Re-applies an earlier revision's template as a new revision; the previous one when no number is given. */
export const rolloutUndoUpdate = defineUpdate<OwnerStatus, [{ toRevision?: number }]>('rolloutUndo');
/** Pause (true) stops replacing machines while scaling still applies; resume (false) goes on. */
export const rolloutPauseUpdate = defineUpdate<OwnerStatus, [{ paused: boolean }]>('rolloutPause');
/** Replaces every machine with a new one of the same template (rolloutAfter = now). */
export const rolloutRestartUpdate = defineUpdate<OwnerStatus, []>('rolloutRestart');
/**
 * Replaces the machines named (and no other) with new ones of the current template, within the rollout's bounds:
 * `capt rotate certificates` asks it for the machines whose certificates expire soon.
 */
export const replaceMachinesUpdate = defineUpdate<OwnerStatus, [{ names: string[] }]>('replaceMachines');
