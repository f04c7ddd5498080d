/**
 * Dynamic config capt wants from a Temporal dev server. Eager activity execution hands an activity
 * scheduled on the workflow's own task queue back in the workflow task's response: a machine's core
 * activities then skip a matching round trip each (the production server sets the same key).
 */
export const devServerDynamicConfigArgs = (): string[] => ['--dynamic-config-value', 'system.enableActivityEagerExecution=true'];
