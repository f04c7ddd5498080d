import type { Logger } from 'pino';

/**
 * How long a worker told to stop (SIGINT, SIGTERM) waits for its tasks before it ends anyway. A task that cannot
 * finish holds a stopping worker for good: a machine's local activity that needed its cluster's workflow (which the
 * stopping worker no longer served) once kept a 5,000-machine scale-up's worker, and the bench's stop, running. Ending
 * it is what a SIGKILL does, which capt is built to survive: Temporal retries what it leaves on another worker.
 */
export const stopGraceMs = 30_000;

/** Once a stop signal comes, ends the process after `graceMs` if it has not ended by then. */
export function endAfterStopGrace(logger: Logger, graceMs = stopGraceMs): void {
  const end = () => {
    logger.warn(
      `capt worker stopped: tasks still running ${graceMs / 1000} s after the stop signal are left to Temporal's retries`,
    );
    process.exit(0);
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => setTimeout(end, graceMs).unref());
}
