/** Machine workflows and provider-independent activities. */
export const coreTaskQueue = 'capt-core';

/**
 * Cluster, control-plane and MachineDeployment workflows (and the activities they call): a queue of their
 * own, so an owner's next step never waits behind the workflow tasks of the hundreds of machines it just
 * started (a MachineDeployment's new run waited 30 s behind 250 of them on one queue).
 */
export const ownersTaskQueue = 'capt-owners';

/** Each provider's activities run on their own queue, served by a worker holding only that provider's credentials. */
export const providerTaskQueue = (provider: string) => `provider-${provider}`;
