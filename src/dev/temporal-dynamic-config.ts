/**
 * Dynamic config capt wants from every Temporal server it runs: the dev server takes it as flags, the
 * production topology's server from its dynamic config file (temporal-server-config.ts).
 */
export const captDynamicConfig = {
  // Eager activity execution hands an activity scheduled on the workflow's own task queue back in the
  // workflow task's response: a machine's core activities then skip a matching round trip each.
  'system.enableActivityEagerExecution': true,
  // capt lists workflows (get, describe, the tests' history guard) faster than the server's default of 10
  // per second and namespace; the dev server allows 100.
  'frontend.namespaceRPS.visibility': 100,
  // Queries that reach a workflow while its task runs wait for that task's end in a buffer that holds one by
  // default: a second (the bridge and a CLI reading a busy MachineDeployment) was refused with BusyWorkflow.
  'history.MaxBufferedQueryCount': 16,
  // Matching's start of an activity waited at most 0.5 s for its workflow's lock, then was refused BusyWorkflow and
  // tried again later: a few times per 1000-worker rollout, a busy MachineDeployment's lock was held longer.
  'history.cacheNonUserContextLockTimeout': '2s',
} as const;

/** `--dynamic-config-value KEY=JSON` arguments for `temporal server start-dev`. */
export const devServerDynamicConfigArgs = (): string[] =>
  Object.entries(captDynamicConfig).flatMap(([key, value]) => [
    '--dynamic-config-value',
    `${key}=${JSON.stringify(value)}`,
  ]);
