import assert from 'node:assert/strict';
import { test } from 'node:test';
import { metricsTelemetry } from '../../src/worker/worker-metrics';

test('CAPT_METRICS_ADDRESS: an IP address and port becomes the Prometheus endpoint; anything else is refused, naming it', () => {
  assert.equal(metricsTelemetry(undefined), undefined);
  assert.equal(metricsTelemetry(''), undefined);
  assert.deepEqual(metricsTelemetry('127.0.0.1:9464'), {
    metrics: { prometheus: { bindAddress: '127.0.0.1:9464', useSecondsForDurations: true } },
  });
  assert.throws(
    () => metricsTelemetry('localhost:9464'),
    /^Error: CAPT_METRICS_ADDRESS localhost:9464: localhost: not an IP address/,
  );
  assert.throws(() => metricsTelemetry('127.0.0.1'), /CAPT_METRICS_ADDRESS 127\.0\.0\.1: no port/);
  assert.throws(() => metricsTelemetry('127.0.0.1:70000'), /port 70000: expected 1 to 65535/);
});
