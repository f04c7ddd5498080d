import { DefaultFailureConverter } from '@temporalio/common';

/**
 * Failures' messages and stack traces go into an encoded payload, which capt's codec encrypts: a failure can
 * quote a spec, a command's output or a secret, and history must hold none of them in plaintext. Workflow
 * bundles take this file (bundleWorkflowCode's failureConverterPath), as clients and workers do.
 */
export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
