import { ActivityFailure, proxyActivities, TimeoutFailure, type ActivityInterfaceFor, type ActivityOptions } from '@temporalio/workflow';

/** Longer than any queue wait seen at 1000 machines; a legitimately long wait only costs a reschedule. */
const scheduleToStartTimeout = '3 minutes';

/** A schedule-to-start timeout: the task never reached a worker. Temporal does not retry these itself. */
const lostTask = (err: unknown) => err instanceof ActivityFailure && err.cause instanceof TimeoutFailure && err.cause.timeoutType === 'SCHEDULE_TO_START';

/**
 * proxyActivities whose calls are scheduled again when Temporal lost their task: a crash of the server's
 * database can drop a task between history and matching (seen here with PostgreSQL SIGKILLed: the activity
 * stayed Scheduled with no backlog and a poller waiting), and nothing would ever time it out. Activities
 * are idempotent, so scheduling again is safe.
 */
export function redeliveredActivities<A extends object>(options: ActivityOptions): ActivityInterfaceFor<A> {
  const activities = proxyActivities<A>({ scheduleToStartTimeout, ...options }) as Record<string, (...args: unknown[]) => Promise<unknown>>;
  return new Proxy({}, {
    get: (_, name) => async (...args: unknown[]) => {
      for (;;) {
        try {
          return await activities[name as string]!(...args);
        } catch (err) {
          if (!lostTask(err)) throw err;
        }
      }
    },
  }) as ActivityInterfaceFor<A>;
}
