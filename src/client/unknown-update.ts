/**
 * An update the target workflow has no handler for: its worker runs older capt code than this client (a
 * workflow pinned to an old build, or workers not upgraded yet). The SDK refuses it before it reaches
 * history, with this message and no failure type, so the message is all there is to tell it by; the test
 * of versioned messages runs it against a real server, so a changed wording fails there.
 */
const noHandlerPrefix = 'No registered handler for update: ';

export const isUnknownUpdate = (cause: Error) => cause.message.startsWith(noHandlerPrefix);

export function unknownUpdateMessage(workflowId: string, update: string): string {
  return (
    `workflow ${workflowId} does not know the update '${update}': it runs older capt code than this client, and nothing was changed. ` +
    "Upgrade capt's workers to this version (`capt upgrade workers`, docs/upgrading-workers.md), or wait until the workflow has moved to the new workers (at its next continue-as-new), then try again"
  );
}
