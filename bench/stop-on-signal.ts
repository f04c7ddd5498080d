/**
 * Makes `stop` run once if the bench is interrupted (SIGINT or SIGTERM), then exit with 130, so a bench
 * stopped by hand leaves nothing it started running. Temporal's SDK runtime listens for these signals too
 * and does not exit, so without this an interrupted bench would carry on. The returned `stop` is the same
 * single stop for the bench's own cleanup: a cleanup racing the interrupt's must not exit before it ends.
 */
export function stopOnSignal(
  what: string,
  stopEverything: () => Promise<void>,
): { stop: () => Promise<void>; letGo: () => void } {
  let stopping: Promise<void> | undefined;
  const stop = () => (stopping ??= stopEverything());
  const handler = (signal: NodeJS.Signals) => {
    console.error(`${signal}: stopping ${what}`);
    void stop()
      .catch((err: unknown) => console.error(`stopping ${what} failed:`, err))
      .finally(() => process.exit(130));
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  const letGo = () => {
    process.off('SIGINT', handler);
    process.off('SIGTERM', handler);
  };
  return { stop, letGo };
}
