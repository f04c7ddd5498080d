import type { MachineStepReason } from '../../src/contract/steps';
import type { DeletionGate, DrainProgress, MachineSpec, NodeHealth, NodeSystemInfo } from '../../src/contract/machine';
import type { UnknownSignal } from '../../src/contract/unknown-signals';
import type { InPlaceUpdateRequest } from '../../src/contract/in-place';

/** Everything the machine workflow knows, as plain JSON: it survives continue-as-new unchanged. */
export interface MachineState {
  spec: MachineSpec;
  createdAt: string;
  /** When it first reached Running (its metric is observed once, across continue-as-new). */
  runningAt?: string;
  bootstrapDataReady: boolean;
  /** The provisioning call that renders the bootstrap data itself is under way (spec.bootstrapInProvisioning). */
  provisioning?: boolean;
  infrastructure?: { providerID: string; addresses: string[] };
  bootstrap?: { state: 'succeeded' } | { state: 'failed'; command: string; exitCode: number; output: string };
  nodeRef?: { name: string };
  node?: NodeHealth;
  /** The Node's system info when it became Ready (absent in runs from before it was kept). */
  nodeInfo?: NodeSystemInfo;
  nodeSynced: boolean;
  /** Labels or annotations changed since the Node was last synced. */
  nodeSyncPending: boolean;
  /** A non-retryable failure outside bootstrap (an unsupported version, say): the machine waits to be deleted. */
  failure?: { reason: string; message: string };
  deletion?: {
    requestedAt: string;
    clusterDeleting: boolean;
    gate: DeletionGate;
    gateStartedAt: string;
    drainStartedAt?: string;
    drainSkipped?: string;
    drain?: DrainProgress;
    /** The drain finished with no volume attached to the Node. */
    volumesClear?: boolean;
    volumeDetachStartedAt?: string;
    message?: string;
  };
  /** What the workflow is doing now and, when stuck, why: shown as current details in the UI. */
  step: string;
  /** `step` for programs; absent in runs from before it was kept. */
  stepReason?: MachineStepReason;
  /** An in-place update accepted and not finished yet. */
  inPlaceUpdate?: InPlaceUpdateRequest;
  /** In-place updates finished: once there is one, reports tell the owner the version the machine runs. */
  inPlaceUpdates?: number;
  /** The MachineSet of the last in-place update this build finished, in reports: the owner knows the update done. */
  inPlaceHash?: string;
  /** How many status reports went to the owner. */
  reports?: number;
  /** Signals without a handler, as received (see unknown-signals.ts). */
  unknownSignals?: UnknownSignal[];
}
