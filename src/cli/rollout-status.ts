import { waitingToStart, type PendingChange } from '../contract/cluster';
import type { OwnerStatus } from '../contract/owner';

/**
 * `capt rollout status`: kubectl's sentence, the counts, a progress bar of updated-and-available machines,
 * and what the rollout waits on (the owner's step, which names the machine and its reason).
 */
export function rolloutStatusText(
  kindName: string,
  s: OwnerStatus,
  pending?: PendingChange,
  barWidth?: number,
): string {
  const waiting = pending && waitingToStart(pending);
  const head =
    s.rolloutComplete && !waiting
      ? `${kindName} successfully rolled out (revision ${s.revision}, ${s.version})`
      : `${kindName}: ${s.paused ? 'rollout paused' : 'waiting for rollout to finish'}: revision ${s.revision} (${s.version})`;
  const counts = `desired ${s.replicas}, updated ${s.updatedReplicas}, ready ${s.readyReplicas}, available ${s.availableReplicas}`;
  const lines = [head, counts];
  if (barWidth !== undefined) {
    const done = s.replicas === 0 ? 1 : Math.min(1, s.updatedReplicas / s.replicas);
    const filled = Math.round(done * barWidth);
    lines.push(`[${'#'.repeat(filled)}${'.'.repeat(barWidth - filled)}] ${Math.round(done * 100)}%`);
  }
  // An applied change the owner has not received yet (held for the control plane's upgrade) is the first thing to say.
  if (waiting) lines.push(`pending: ${pending.message}`);
  if (!s.rolloutComplete) lines.push(`step: ${s.step}`);
  return lines.join('\n');
}
