/**
 * The signal that starts and stops the worker's preloaded CPU profiler. Not SIGUSR2: Temporal's Runtime
 * shuts its workers down on it. A process without the profiler ignores SIGWINCH (its default action).
 */
export const profilerSignal = 'SIGWINCH';
