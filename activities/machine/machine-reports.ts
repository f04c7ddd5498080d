import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { machineReportsSignal, machineReportsUpdate } from '../../src/contract/cluster-messages';
import type { MachineReport } from '../../src/contract/machine';

/**
 * Machines' reports to an owner leave this worker as one message at a time: the reports made while one is in flight
 * go together in the next. A thousand machines each signalling their one owner made the server refuse thousands of
 * those signals (BusyWorkflow: every signal takes the owner's lock for a write) and cost the owner a task each.
 */
export const reportsPerMessage = 200;

/** Where a batch goes: the owner's workflow, and whether it takes reports as an update (machineReportsUpdate). */
export interface ReportTarget {
  owner: string;
  byUpdate: boolean;
}

type Send = (target: ReportTarget, reports: MachineReport[]) => Promise<void>;

interface Waiting {
  report: MachineReport;
  settle: (err?: unknown) => void;
}

/** Each owner's reports not yet sent, and whether a signal to it is in flight; one per worker process. */
export class ReportCoalescer {
  private readonly owners = new Map<string, { waiting: Waiting[]; sending: boolean }>();

  constructor(private readonly send: Send) {}

  /** Resolves once a message carrying `report` reached its owner; rejects with that message's error. */
  deliver(target: ReportTarget, report: MachineReport): Promise<void> {
    // Machines of an owner's older build signal while newer ones update it: each way has its own queue.
    const key = `${target.byUpdate ? 'update' : 'signal'} ${target.owner}`;
    return new Promise((resolve, reject) => {
      const queue = this.owners.get(key) ?? { waiting: [], sending: false };
      this.owners.set(key, queue);
      queue.waiting.push({ report, settle: (err) => (err === undefined ? resolve() : reject(err)) });
      if (!queue.sending) void this.flush(key, target, queue);
    });
  }

  private async flush(
    key: string,
    target: ReportTarget,
    queue: { waiting: Waiting[]; sending: boolean },
  ): Promise<void> {
    queue.sending = true;
    while (queue.waiting.length > 0) {
      const batch = queue.waiting.splice(0, reportsPerMessage);
      const err = await this.send(
        target,
        batch.map((w) => w.report),
      ).then(
        () => undefined,
        (e: unknown) => e ?? new Error('signal failed'),
      );
      for (const w of batch) w.settle(err);
    }
    queue.sending = false;
    this.owners.delete(key);
  }
}

let coalescer: ReportCoalescer | undefined;

const tellOwner =
  (client: Client): Send =>
  ({ owner, byUpdate }, reports) =>
    byUpdate
      ? client.workflow.getHandle(owner).executeUpdate(machineReportsUpdate, { args: [reports] })
      : client.workflow.getHandle(owner).signal(machineReportsSignal, reports);

/**
 * A machine's report to its owner, run as a local activity in the machine's workflow task. An owner that is gone
 * fails it for good (type OwnerNotFound), as an external signal to it would; anything else is retried.
 */
export async function deliverMachineReport(input: {
  owner: string;
  report: MachineReport;
  byUpdate?: boolean;
}): Promise<void> {
  coalescer ??= new ReportCoalescer(tellOwner(Context.current().client));
  const target = { owner: input.owner, byUpdate: input.byUpdate ?? false };
  await coalescer.deliver(target, input.report).catch((err: unknown) => {
    if (err instanceof WorkflowNotFoundError)
      throw ApplicationFailure.create({
        message: `owner ${input.owner} is not running: the report of ${input.report.name} has nobody to go to`,
        type: 'OwnerNotFound',
        nonRetryable: true,
      });
    throw err;
  });
}
