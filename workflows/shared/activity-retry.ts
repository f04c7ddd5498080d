import type { RetryPolicy } from '@temporalio/common';

/**
 * How capt's workflows retry an activity: at once for a blip, then every 30 s at most while a worker or cluster is
 * down, never giving up (the workflow's step says what it waits for).
 */
export const activityRetry: RetryPolicy = { initialInterval: '1s', maximumInterval: '30s' };
