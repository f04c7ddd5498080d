import { Context } from '@temporalio/activity';
import {
  type Client,
  WorkflowExecutionAlreadyStartedError,
  WorkflowIdReusePolicy,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
} from '@temporalio/client';
import { MachinePhase, type MachineSpec, type MachineStatus } from '../../src/contract/machine';
import { requestMachineDeletionSignal, updateInPlaceUpdate } from '../../src/contract/machine-messages';
import type { InPlaceUpdateRequest } from '../../src/contract/in-place';
import { machineSearchAttributes } from '../../src/contract/search-attributes';
import { coreTaskQueue } from '../../src/contract/task-queues';
import { machineWorkflowId, machineWorkflowType } from '../../src/contract/workflow-ids';
import type { MachineStartMemo } from './machine-adoption';

/**
 * An owner's machines are started and told to go from an activity, through the client, rather than as
 * child workflows and external signals: each of those writes to the owner's own history and serializes on
 * it (250 child starts took 30 s), while a client call touches only the machine's.
 */

/** Calls in flight at once from one activity. */
const concurrency = 50;

/** Runs `work` on every item, `concurrency` at a time, heartbeating the count done. */
export async function eachHeartbeating<T>(items: T[], work: (item: T) => Promise<void>): Promise<void> {
  const ctx = Context.current();
  for (let i = 0; i < items.length; i += concurrency) {
    await Promise.all(items.slice(i, i + concurrency).map(work));
    ctx.heartbeat(Math.min(i + concurrency, items.length));
  }
}

/**
 * Starts a machine workflow for each spec. Returns the names that were refused because a machine of that
 * name existed before; a machine this batch started on an earlier attempt (its memo names `batch`) is no
 * refusal, so a retried activity neither loses nor duplicates a machine.
 */
export async function startMachineWorkflows(input: {
  batch: string;
  machines: { spec: MachineSpec; summary: string; templateHash?: string }[];
}): Promise<string[]> {
  const client = Context.current().client;
  const refused: string[] = [];
  await eachHeartbeating(input.machines, async ({ spec, summary, templateHash }) => {
    // The memo's template hash lets a rebuilt owner adopt the machine as what it is (see machine-adoption.ts).
    const memo: MachineStartMemo = { batch: input.batch, ...(templateHash ? { templateHash } : {}) };
    const workflowId = machineWorkflowId(spec.namespace, spec.name);
    try {
      await client.workflow.start(machineWorkflowType, {
        taskQueue: coreTaskQueue,
        workflowId,
        args: [{ spec }],
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        staticSummary: summary,
        typedSearchAttributes: machineSearchAttributes(spec, MachinePhase.Pending),
        memo,
      });
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      const existing = await client.workflow.getHandle(workflowId).describe();
      if (existing.memo?.batch !== input.batch) refused.push(spec.name);
    }
  });
  return refused;
}

/** Asks each machine to delete itself; a machine already gone needs no asking. */
export async function requestMachineDeletions(input: {
  namespace: string;
  names: string[];
  clusterDeleting: boolean;
}): Promise<void> {
  const client = Context.current().client;
  await eachHeartbeating(input.names, async (name) => {
    await client.workflow
      .getHandle(machineWorkflowId(input.namespace, name))
      .signal(requestMachineDeletionSignal, { clusterDeleting: input.clusterDeleting })
      .catch((err: unknown) => {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      });
  });
}

/**
 * Asks each machine to take `request`'s version in place. Returns the names that refused it (gone, not running,
 * being deleted, a build without the update): the owner replaces those. The update's ID is the request's, so a
 * retried activity asks each machine once.
 */
export async function requestInPlaceUpdates(input: {
  namespace: string;
  names: string[];
  request: InPlaceUpdateRequest;
}): Promise<string[]> {
  const client = Context.current().client;
  const refused: string[] = [];
  await eachHeartbeating(input.names, async (name) => {
    if (!(await inPlaceUpdate(client, input.namespace, name, input.request))) refused.push(name);
  });
  return refused;
}

/**
 * Asks one machine to take its owner's new template in place: `updating`, `unchanged` when it takes nothing of it
 * (a control-plane machine whose kubelet's arguments come from the configuration that did not change), or
 * `refused`. A retry is answered as the first ask was: the update's id is the request's.
 */
export async function requestMachineInPlaceUpdate(input: {
  namespace: string;
  name: string;
  request: InPlaceUpdateRequest;
}): Promise<'updating' | 'unchanged' | 'refused'> {
  const status = await inPlaceUpdate(Context.current().client, input.namespace, input.name, input.request);
  if (!status) return 'refused';
  return status.conditions.some((c) => c.type === 'Updating' && c.status === 'True') ? 'updating' : 'unchanged';
}

/** The machine's status once it took the request; undefined when it refused it or is gone. */
async function inPlaceUpdate(
  client: Client,
  namespace: string,
  name: string,
  request: InPlaceUpdateRequest,
): Promise<MachineStatus | undefined> {
  return client.workflow
    .getHandle(machineWorkflowId(namespace, name))
    .executeUpdate(updateInPlaceUpdate, {
      args: [request],
      updateId: `in-place-${request.templateHash}-${request.version}`,
    })
    .catch((err: unknown) => {
      if (!(err instanceof WorkflowNotFoundError || err instanceof WorkflowUpdateFailedError)) throw err;
      return undefined;
    });
}
