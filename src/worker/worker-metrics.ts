import type { TelemetryOptions } from '@temporalio/worker';
import { hostAndPort } from '../management-api/webhook-url';

/**
 * `CAPT_METRICS_ADDRESS` (`capt worker --metrics-address HOST:PORT`): where the worker serves Prometheus metrics
 * at `/metrics`, the SDK's and capt's own (docs/metrics.md); unset, it serves none. Durations in seconds, as
 * Prometheus names them. A bad address is refused naming `setting`, where it was given.
 */
export function metricsTelemetry(
  address: string | undefined,
  setting = 'CAPT_METRICS_ADDRESS',
): TelemetryOptions | undefined {
  if (!address) return undefined;
  let authority: string;
  try {
    ({ authority } = hostAndPort(address, false));
  } catch (err) {
    throw new Error(`${setting} ${address}: ${(err as Error).message}`, { cause: err });
  }
  return { metrics: { prometheus: { bindAddress: authority, useSecondsForDurations: true } } };
}
