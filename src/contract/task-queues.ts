/** Workflows and provider-independent activities. */
export const coreTaskQueue = 'capt-core';

/** Each provider's activities run on their own queue, served by a worker holding only that provider's credentials. */
export const providerTaskQueue = (provider: string) => `provider-${provider}`;
