import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { machineStatusQuery } from '../../src/contract/machine-messages';
import type { MachineStatus } from '../../src/contract/machine';
import type { MachineRecord, OwnerRef } from '../../src/contract/owner';
import { adoptedRecord, labelledOwner, type MachineStartMemo } from './machine-adoption';
import { eachHeartbeating } from './machine-fan-out';

/**
 * What exists of a cluster's machines, read from Temporal itself: the visibility store lists the machine
 * workflows (CaptCluster, CaptKind), and each one's status query says whose it is and where it stands.
 * A rebuilt owner adopts its machines from here a page at a time, so no payload grows with the machine count.
 */

/** Machines per page: records of a few hundred bytes each, far below Temporal's payload limits. */
const pageSize = 100;

interface ListedMachine {
  name: string;
  workflowId: string;
  memo?: MachineStartMemo;
}

/** The cluster's running machine workflows, by name. Closed ones are deleted machines: nothing to adopt. */
async function clusterMachines(client: Client, namespace: string, cluster: string): Promise<ListedMachine[]> {
  const query = `CaptKind = "Machine" AND CaptNamespace = "${namespace}" AND CaptCluster = "${cluster}" AND ExecutionStatus = "Running"`;
  const prefix = `machine/${namespace}/`;
  const found: ListedMachine[] = [];
  for await (const wf of client.workflow.list({ query })) {
    found.push({
      name: wf.workflowId.slice(prefix.length),
      workflowId: wf.workflowId,
      memo: wf.memo as MachineStartMemo | undefined,
    });
  }
  return found.sort((a, b) => a.name.localeCompare(b.name));
}

/** A machine's own status; undefined when its workflow is gone (deleted meanwhile). Other errors are retried. */
async function machineStatus(client: Client, workflowId: string): Promise<MachineStatus | undefined> {
  return client.workflow
    .getHandle(workflowId)
    .query(machineStatusQuery)
    .catch((err: unknown) => {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    });
}

async function statuses(
  client: Client,
  machines: ListedMachine[],
): Promise<{ machine: ListedMachine; status: MachineStatus }[]> {
  const out: { machine: ListedMachine; status: MachineStatus }[] = [];
  await eachHeartbeating(machines, async (machine) => {
    const status = await machineStatus(client, machine.workflowId);
    if (status) out.push({ machine, status });
  });
  return out;
}

/**
 * One page of the machines that name `owner`, as the records it keeps, after the machine named `after`
 * (pages go by name, so machines created or deleted meanwhile shift nothing). `after` in the answer is
 * where the next page starts; absent on the last page.
 */
export async function listOwnedMachines(input: {
  namespace: string;
  cluster: string;
  owner: OwnerRef;
  after?: string;
}): Promise<{ records: MachineRecord[]; after?: string }> {
  const client = Context.current().client;
  const all = await clusterMachines(client, input.namespace, input.cluster);
  const page = all.filter((m) => input.after === undefined || m.name > input.after).slice(0, pageSize);
  const now = new Date().toISOString();
  const records = (await statuses(client, page)).flatMap(
    ({ machine, status }) => adoptedRecord(input.owner, status, machine.memo, now) ?? [],
  );
  records.sort((a, b) => a.name.localeCompare(b.name));
  return { records, ...(page.length === pageSize ? { after: page.at(-1)!.name } : {}) };
}

/** How many running machines each owner of the cluster has (`Kind/name`; `Cluster` for its standalone machines). */
export async function countClusterMachines(input: {
  namespace: string;
  cluster: string;
}): Promise<Record<string, number>> {
  const client = Context.current().client;
  const counts: Record<string, number> = {};
  for (const { status } of await statuses(client, await clusterMachines(client, input.namespace, input.cluster))) {
    const owner = labelledOwner(status.labels);
    const key = owner ? `${owner.kind}/${owner.name}` : 'Cluster';
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

/** Each workflow's state as Temporal tells it (RUNNING, TERMINATED, FAILED, TIMED_OUT, COMPLETED, ...), NOT_FOUND when it never ran. */
export async function workflowStates(input: { workflowIds: string[] }): Promise<Record<string, string>> {
  const client = Context.current().client;
  const states: Record<string, string> = {};
  await Promise.all(
    input.workflowIds.map(async (id) => {
      states[id] = await client.workflow
        .getHandle(id)
        .describe()
        .then(
          (d) => d.status.name,
          (err: unknown) => {
            if (err instanceof WorkflowNotFoundError) return 'NOT_FOUND';
            throw err;
          },
        );
    }),
  );
  return states;
}
