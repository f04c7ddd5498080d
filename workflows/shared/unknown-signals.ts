import { log, setDefaultSignalHandler, workflowInfo } from '@temporalio/workflow';
import { unknownSignalsKept, type UnknownSignal } from '../../src/contract/unknown-signals';

/**
 * Makes every signal without a handler a recorded, logged fact in `kept` (part of the workflow's state,
 * carried across continue-as-new), then calls `changed` so status and details show it. Call it after the
 * workflow's last `setHandler`, before its first await: buffered signals go to the default handler at once,
 * and a known signal must reach its own handler.
 */
export function recordUnknownSignals(kept: UnknownSignal[], changed: () => void): void {
  setDefaultSignalHandler((name) => {
    const at = new Date().toISOString();
    const seen = kept.find((s) => s.name === name);
    if (seen) Object.assign(seen, { count: seen.count + 1, lastAt: at });
    else kept.push({ name, count: 1, firstAt: at, lastAt: at });
    if (kept.length > unknownSignalsKept) kept.splice(0, kept.length - unknownSignalsKept);
    const { workflowId, workflowType } = workflowInfo();
    log.warn(
      `${workflowType} ${workflowId} has no handler for signal '${name}': ignored and recorded in its status (sent by newer code? upgrade this workflow's workers)`,
      { signal: name },
    );
    changed();
  });
}

/** The status field, only when there is something to show. */
export const unknownSignalsField = (kept: UnknownSignal[] | undefined) =>
  kept?.length ? { unknownSignals: kept } : {};

/** A line for a workflow's current details (the UI), only when there is something to show. */
export function unknownSignalsDetails(kept: UnknownSignal[] | undefined): string {
  if (!kept?.length) return '';
  return `\n\nSignals without a handler, ignored: ${kept.map((s) => `${s.name} (${s.count}x, last ${s.lastAt})`).join(', ')}`;
}
