import { metricMeter } from '@temporalio/workflow';
import type { UnhealthyMachine } from '../../src/contract/health-check';

/**
 * capt's own metrics, emitted by its workflows through the SDK's meter: the worker that runs the workflow task
 * exports them with the SDK's own on its Prometheus endpoint (`capt worker --metrics-address`), and a replayed
 * task emits nothing, so each event counts once. Names are listed in docs/metrics.md.
 */

interface MachineTags {
  namespace: string;
  cluster: string;
  role: 'control-plane' | 'worker';
}

/** A machine reached Running: counted, and the time from its workflow's start (the apply that made it) observed. */
export function machineRunning(tags: MachineTags, seconds: number): void {
  metricMeter
    .createCounter('capt_machines_running', 'machines', 'machines that reached Running')
    .withTags({ ...tags })
    .add(1);
  metricMeter
    .createHistogram('capt_machine_running_seconds', 'float', 's', 'from a machine made to its Node Ready (Running)')
    .withTags({ ...tags })
    .record(seconds);
}

/** A machine is gone: its infrastructure deleted (counted before its Node, never in its run's last task). */
export function machineDeleted(tags: MachineTags): void {
  metricMeter
    .createCounter('capt_machines_deleted', 'machines', 'machines deleted')
    .withTags({ ...tags })
    .add(1);
}

/** An owner's health check remediated these machines. */
export function machinesRemediated(
  tags: { namespace: string; cluster: string; owner: string; kind: string },
  done: UnhealthyMachine[],
): void {
  for (const m of done)
    metricMeter
      .createCounter('capt_remediations', 'machines', 'machines a health check remediated')
      .withTags({ ...tags, reason: m.reason })
      .add(1);
}
