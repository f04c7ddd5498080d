import { type MachineState } from './machine-model';
import { unknownSignalsField } from '../shared/unknown-signals';
import {
  MachinePhase,
  nodeReadyStatus,
  type Condition,
  type MachineConditionType,
  type MachineStatus,
} from '../../src/contract/machine';

/** Condition reasons of the machine workflow (Cluster API's where it has one). */
export const Reason = {
  /** Bootstrap data is not rendered yet. */
  DataSecretNotAvailable: 'DataSecretNotAvailable',
  /** The provider is creating the machine. */
  WaitingForInfrastructure: 'WaitingForInfrastructure',
  /** The machine exists; its bootstrap has not reported success yet. */
  WaitingForBootstrap: 'WaitingForBootstrap',
  /** The bootstrap success sentinel never appeared; the failing command is in the message. */
  BootstrapFailed: 'BootstrapFailed',
  /** No Node with the machine's providerID yet. */
  WaitingForNode: 'WaitingForNode',
  /** The Node's Ready condition is not True. */
  NodeNotReady: 'NodeNotReady',
  /** The Node's labels, annotations and taints are not synced yet. */
  NodeNotSynced: 'NodeNotSynced',
  /** The Node was deleted while the machine exists. */
  NodeNotFound: 'NodeNotFound',
  /** A Node condition other than Ready is True (memory, disk or PID pressure, a network problem). */
  NodeConditionsFailed: 'NodeConditionsFailed',
} as const;

const condition = (type: MachineConditionType, ok: boolean, reason?: string, message?: string): Condition =>
  ok
    ? { type, status: 'True' }
    : { type, status: 'False', ...(reason ? { reason } : {}), ...(message ? { message } : {}) };

/** NodeReady with Cluster API's statuses (a MachineHealthCheck may check it for Unknown or False), capt's reasons. */
function nodeReadyCondition(state: MachineState): Condition {
  const status = nodeReadyStatus(!!state.nodeRef, state.node);
  if (status === 'True') return { type: 'NodeReady', status };
  if (!state.nodeRef) return { type: 'NodeReady', status, reason: Reason.WaitingForNode };
  if (state.node?.gone)
    return {
      type: 'NodeReady',
      status,
      reason: Reason.NodeNotFound,
      message: `Node ${state.nodeRef.name} was deleted`,
    };
  return {
    type: 'NodeReady',
    status,
    reason: Reason.NodeNotReady,
    ...(state.node?.message && { message: state.node.message }),
  };
}

export function machinePhase(state: MachineState): MachinePhase {
  if (state.deletion) return state.deletion.gate === 'Deleted' ? MachinePhase.Deleted : MachinePhase.Deleting;
  if (state.bootstrap?.state === 'failed' || state.failure) return MachinePhase.Failed;
  if (state.nodeRef && state.nodeSynced) return MachinePhase.Running;
  if (state.bootstrap?.state === 'succeeded') return MachinePhase.Provisioned;
  // Rendered inside the provisioning call, the bootstrap data is not ready before that call returns, yet the
  // machine is being provisioned: Cluster API's Provisioning, with BootstrapConfigReady False until then.
  if (state.bootstrapDataReady || state.provisioning) return MachinePhase.Provisioning;
  return MachinePhase.Pending;
}

/** The one place the machine's status is computed, from its state alone. */
export function machineStatus(state: MachineState): MachineStatus {
  const { spec } = state;
  const bootstrapFailed = state.bootstrap?.state === 'failed' ? state.bootstrap : undefined;
  const failure =
    bootstrapFailed &&
    `command '${bootstrapFailed.command}' exited ${bootstrapFailed.exitCode}: ${bootstrapFailed.output.trim().split('\n').slice(-5).join(' | ')}`;
  const infraReady = state.bootstrap?.state === 'succeeded';
  const nodeReady = state.node?.ready === 'True';
  const conditions: Condition[] = [
    condition('BootstrapConfigReady', state.bootstrapDataReady, Reason.DataSecretNotAvailable),
    condition(
      'InfrastructureReady',
      infraReady,
      state.failure?.reason ??
        (bootstrapFailed
          ? Reason.BootstrapFailed
          : state.infrastructure
            ? Reason.WaitingForBootstrap
            : Reason.WaitingForInfrastructure),
      state.failure?.message ?? failure,
    ),
    ...(state.infrastructure
      ? [
          condition(
            'BootstrapExecSucceeded',
            infraReady,
            bootstrapFailed ? Reason.BootstrapFailed : Reason.WaitingForBootstrap,
            failure,
          ),
        ]
      : []),
    nodeReadyCondition(state),
    condition(
      'NodeHealthy',
      !!state.nodeRef && nodeReady && state.nodeSynced && !state.node?.gone && !state.node?.conditions?.length,
      !state.nodeRef
        ? Reason.WaitingForNode
        : state.node?.gone
          ? Reason.NodeNotFound
          : !nodeReady
            ? Reason.NodeNotReady
            : !state.nodeSynced
              ? Reason.NodeNotSynced
              : Reason.NodeConditionsFailed,
      state.node?.gone
        ? `Node ${state.nodeRef?.name} was deleted`
        : state.node?.conditions
            ?.map((c) => `${c.type}=${c.status} since ${c.since}${c.reason ? ` (${c.reason})` : ''}`)
            .join('; ') || undefined,
    ),
  ];
  const firstFalse = conditions.find((c) => c.status !== 'True');
  conditions.unshift(
    condition(
      'Ready',
      !firstFalse && !state.deletion,
      state.deletion ? 'Deleting' : firstFalse?.reason,
      state.deletion ? state.deletion.message : firstFalse?.message,
    ),
  );
  if (state.inPlaceUpdate)
    conditions.push({
      type: 'Updating',
      status: 'True',
      reason: 'InPlaceUpdating',
      message: `updating in place to ${state.inPlaceUpdate.version}`,
    });
  if (state.deletion) {
    conditions.push({
      type: 'Deleting',
      status: 'True',
      reason: state.deletion.gate,
      message: state.deletion.message ?? '',
      lastTransitionTime: state.deletion.gateStartedAt,
    });
  }
  return {
    namespace: spec.namespace,
    name: spec.name,
    cluster: spec.cluster,
    phase: machinePhase(state),
    version: spec.version,
    providerID: state.infrastructure?.providerID,
    nodeRef: state.nodeRef?.name,
    nodeInfo: state.nodeInfo,
    addresses: state.infrastructure?.addresses ?? [],
    failureDomain: spec.failureDomain,
    createdAt: state.createdAt,
    conditions,
    step: state.step,
    stepReason: state.stepReason ?? 'Starting',
    labels: spec.labels,
    annotations: spec.annotations,
    ...(spec.taints?.length ? { taints: spec.taints } : {}),
    sequence: state.reports ?? 0,
    ...unknownSignalsField(state.unknownSignals),
  };
}
