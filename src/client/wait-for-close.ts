import { setTimeout as sleep } from 'node:timers/promises';
import type { WorkflowHandle } from '@temporalio/client';
import { withServiceRetry } from './query-with-retry';

/**
 * Waits until the workflow's latest run has closed, looking once a second (`onTick` between looks), and returns its
 * outcome (a failed run throws as `result()` does); false when `deadline` (ms since the epoch) passes first. Not
 * `result()`'s long poll alone: a server under load fails it with "context deadline exceeded", which the client does
 * not retry, and a deletion that was going well was reported failed (10 clusters of 300 workers, 2026-11-29).
 */
export async function waitForClose(
  handle: WorkflowHandle,
  deadline: number,
  onTick: () => Promise<void>,
): Promise<boolean> {
  while (Date.now() < deadline) {
    const { status } = await withServiceRetry(() => handle.describe());
    if (status.name !== 'RUNNING') {
      await withServiceRetry(() => handle.result());
      return true;
    }
    await sleep(1000);
    await onTick();
  }
  return false;
}
