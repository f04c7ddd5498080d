import type { Logger } from 'pino';

/**
 * How long a worker told to stop (SIGINT, SIGTERM) waits for its tasks before it ends anyway. A machine's local
 * activity that needs its cluster's workflow (served by this worker, which has stopped polling) retries until
 * its task ends, which it never does: a SIGTERM never ended a worker in a 5,000-machine scale-up. Ending it is what a
 * SIGKILL does, which capt is built to survive: Temporal retries what it leaves on another worker.
 */
export const stopGraceMs = 30_000;

/** Once a stop signal comes, ends the process after stopGraceMs if it has not ended by then. */
export function endAfterStopGrace(logger: Logger): void {
  const end = () => {
    logger.warn(
      `capt worker stopped: tasks still running ${stopGraceMs / 1000} s after the stop signal are left to Temporal's retries`,
    );
    process.exit(0);
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => setTimeout(end, stopGraceMs).unref());
}
