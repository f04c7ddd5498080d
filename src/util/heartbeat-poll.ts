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
  const heartbeat = waitHeartbeat(ctx);
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    heartbeat(opts.progress());
    if (opts.deadline !== undefined && Date.now() >= opts.deadline) return undefined;
    await ctx.sleep(
      opts.deadline !== undefined
        ? Math.max(0, Math.min(opts.intervalMs, opts.deadline - Date.now()))
        : opts.intervalMs,
    );
  }
}

/**
 * A wait's first seconds go unreported: most waits (a bootstrap, a Node) end within them, and each heartbeat is a
 * write to the workflow's state on the server (the SDK sends a wait's first one at once, later ones throttled).
 * The activity's heartbeat timeout (20 s or more) still ends a wait whose worker died from the wait's start.
 */
export const quietWaitMs = 3000;

/** `ctx.heartbeat` for a waiting activity: silent for its first quietWaitMs, then every call goes to the SDK. */
export function waitHeartbeat(ctx: Context): (details: unknown) => void {
  const loudFrom = Date.now() + quietWaitMs;
  return (details) => {
    if (Date.now() >= loudFrom) ctx.heartbeat(details);
  };
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
