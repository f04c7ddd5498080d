/**
 * A signal a workflow has no handler for: sent by newer code (a sender upgraded before this workflow's
 * worker) or by mistake. Workflows keep these instead of dropping them silently, and show them in their
 * status and details; a signal cannot be refused, so this is how its sender's mistake becomes visible.
 */
export interface UnknownSignal {
  name: string;
  count: number;
  firstAt: string;
  lastAt: string;
}

/** The most names a workflow keeps (the oldest goes first): its state stays small whatever is sent to it. */
export const unknownSignalsKept = 5;
