import { WorkflowUpdateFailedError, type UpdateDefinition, type WorkflowHandle } from '@temporalio/client';
import { RejectedError } from './client-errors';
import { isUnknownUpdate, unknownUpdateMessage } from './unknown-update';

/**
 * Sends an update and waits for its result. A refused one becomes a RejectedError carrying the validator's
 * message, or, when the workflow runs code that has no such update, saying so and what to do.
 */
export async function executeUpdate<Ret, Args extends unknown[]>(
  handle: WorkflowHandle,
  definition: UpdateDefinition<Ret, Args>,
  ...args: Args
): Promise<Ret> {
  try {
    // The SDK's overloads tell updates with arguments from those without; `args` is whichever the definition takes.
    const execute = handle.executeUpdate.bind(handle) as (
      def: UpdateDefinition<Ret, Args>,
      options: { args: Args },
    ) => Promise<Ret>;
    return await execute(definition, { args });
  } catch (err) {
    if (!(err instanceof WorkflowUpdateFailedError) || !err.cause) throw err;
    throw new RejectedError(
      isUnknownUpdate(err.cause) ? unknownUpdateMessage(handle.workflowId, definition.name) : err.cause.message,
    );
  }
}
