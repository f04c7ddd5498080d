import type { DeletionGate } from './machine';

// What each workflow is doing, for programs (render, tests, automation); the `step` text beside it says the
// same for people and may change wording at any time.

/** A machine's step; while it is deleted, the deletion gate it is at. */
export type MachineStepReason =
  | 'Starting'
  | 'RenderingBootstrapData'
  | 'CreatingInfrastructure'
  | 'WaitingForBootstrap'
  | 'BootstrapFailed'
  | 'WaitingForNode'
  | 'SyncingNode'
  | 'Running'
  /** Taking its owner's new version where it runs (see in-place.ts). */
  | 'UpdatingInPlace'
  | 'Failed'
  | 'DeletionRequested'
  | DeletionGate;

/** A control plane's or MachineDeployment's step. */
export type OwnerStepReason =
  | 'Starting'
  | 'CreatingMachines'
  | 'DeletingMachines'
  | 'MachineFailed'
  | 'DetachingEndpoint'
  | 'RemovingEtcdMember'
  | 'PreflightFailed'
  | 'ChangingInPlace'
  /** Machines take the new template's version where they run instead of being replaced. */
  | 'UpdatingInPlace'
  | 'RollingOut'
  | 'Paused'
  | 'ClusterPaused'
  /** Machines to replace wait for the cluster's maintenance window. */
  | 'WaitingForMaintenanceWindow'
  | 'Stable'
  | 'Remediating'
  | 'RemediationBlocked'
  | 'Deleting'
  | 'Deleted'
  /** Rebuilt after its workflow was lost: adopting the machines it left. */
  | 'Adopting';

/** A cluster's step. */
export type ClusterStepReason =
  | 'Starting'
  | 'CreatingInfrastructure'
  | 'CreatingSecrets'
  | 'StartingControlPlane'
  | 'WaitingForControlPlane'
  | 'Reconciled'
  | 'Paused'
  | 'DeletingMachines'
  | 'DeletingMachineDeployments'
  | 'DeletingControlPlane'
  | 'DeletingInfrastructure'
  | 'Deleted';
