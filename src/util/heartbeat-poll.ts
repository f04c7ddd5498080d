import { Context } from '@temporalio/activity';

/**
 * The one way capt waits inside an activity: probe, heartbeat what was seen, sleep, until the probe
 * answers or the deadline passes (undefined then). Sleeping through the activity context makes a
 * cancellation from the workflow end the wait at once.
 */
export async function pollWithHeartbeat<T>(
  probe: () => Promise<T | undefined>,
  opts: { intervalMs: number; deadline?: number; progress: () => unknown },
): Promise<T | undefined> {
  const ctx = Context.current();
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    ctx.heartbeat(opts.progress());
    if (opts.deadline !== undefined && Date.now() >= opts.deadline) return undefined;
    await ctx.sleep(
      opts.deadline !== undefined
        ? Math.max(0, Math.min(opts.intervalMs, opts.deadline - Date.now()))
        : opts.intervalMs,
    );
  }
}

/** Runs `work`, heartbeating every 5 s until it settles: for calls that take seconds but must not hide a dead worker. */
export async function heartbeating<T>(work: () => Promise<T>): Promise<T> {
  const ctx = Context.current();
  const timer = setInterval(() => ctx.heartbeat(), 5000);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}
