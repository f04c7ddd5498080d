/**
 * Runs `stop` once if the bench is interrupted (SIGINT or SIGTERM), then exits with 130, so a bench stopped
 * by hand leaves nothing it started running. Needed because Temporal's SDK runtime listens for these signals
 * too and does not exit, so an interrupted bench would otherwise carry on. Returns the way to let go.
 */
export function stopOnSignal(what: string, stop: () => Promise<void>): () => void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    console.error(`${signal}: stopping ${what}`);
    void stop().catch((err: unknown) => console.error(`stopping ${what} failed:`, err)).finally(() => process.exit(130));
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return () => {
    process.off('SIGINT', handler);
    process.off('SIGTERM', handler);
  };
}
