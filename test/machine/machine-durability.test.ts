import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  clusterDir,
  machineDir,
  machineHostDir,
  machineRoot,
  machinesDir,
  sandboxProcess,
} from '../../providers/local/layout';
import { deleteMachineUpdate, machineStatusQuery } from '../../src/contract/machine-messages';
import { MachineHarness } from '../fixtures/machine-harness';
import { until } from '../fixtures/until';
import { Workloads } from '../fixtures/workloads';
import { processGroup } from '../fixtures/leaks';
import { runningPid } from '../../src/util/processes';
import { stopGraceMs } from '../../src/worker/stop-grace';

const h = new MachineHarness('du');
before(() => h.start());
after(() => h.stop());

test('SIGKILL of the worker mid-provision and again mid-drain: a new worker finishes, one machine existed, nothing leaked', async () => {
  const w = new Workloads(h.driver.kubeconfig());
  const handle = await h.startMachine(
    h.spec('du-w', { infrastructure: { kind: 'LocalMachineTemplate', spec: { bootDelaySeconds: 6 } } }),
  );
  const mdir = machineDir(clusterDir('default', 'du'), 'du-w');
  // While it boots the machine has processes of its own (its sandboxed cloud-init, a process group); when it is deleted, none may remain.
  const bootPid = await until('the booting sandbox', () => runningPid(machineHostDir(mdir), sandboxProcess), {
    timeoutMs: 30_000,
    intervalMs: 100,
  }).catch(() => undefined);
  assert.equal((await handle.query(machineStatusQuery)).stepReason, 'CreatingInfrastructure', 'killed mid-provision');
  assert.ok(bootPid, "the booting machine's sandbox runs");
  assert.ok((await processGroup(bootPid)).length > 0, 'its process group is seen');
  await h.killWorker();
  await sleep(1000);
  await h.startWorker();
  const running = await h.waitFor(handle, (s) => s.phase === 'Running', 'Running after the first kill');
  const boots = (await readFile(join(machineRoot(mdir), 'var/log/capt-boots.log'), 'utf8')).trim().split('\n');
  assert.equal(boots.length, 1, 'the machine booted exactly once');
  const { readdir } = await import('node:fs/promises');
  assert.deepEqual(
    (await readdir(machinesDir(clusterDir('default', 'du')))).filter((m) => m.startsWith('du-w')),
    ['du-w'],
    'exactly one machine exists',
  );

  await w.deployment('default', 'held', 1);
  for (let i = 0; i < 200 && (await w.runningOn('default', 'held'))[running.nodeRef!] !== 1; i++) await sleep(300);
  await w.budget('default', 'held-pdb', 'held', 1);
  await handle.executeUpdate(deleteMachineUpdate, { args: [{}] });
  await h.waitFor(
    handle,
    (s) => /held-pdb/.test(s.conditions.find((c) => c.type === 'Deleting')?.message ?? ''),
    'the drain blocked by held-pdb',
  );
  await h.killWorker();
  await sleep(1000);
  await h.startWorker();
  await w.relaxBudget('default', 'held-pdb', 0);
  const final = await handle.result();
  assert.equal(final.phase, 'Deleted');
  assert.equal(existsSync(mdir), false, 'the machine directory is gone');
  assert.deepEqual(await processGroup(bootPid), [], "no process of the machine's boot remains");
  // A worker's only long-lived part is its simulated kubelet in the cluster agent: were it still running, it would register the Node again.
  assert.equal(await h.kube.getNode(running.nodeRef!), undefined);
  await sleep(3000);
  assert.equal(await h.kube.getNode(running.nodeRef!), undefined, 'the Node stays gone: its kubelet stopped');
  const attempts = (await handle.fetchHistory())
    .events!.filter((e) => e.activityTaskStartedEventAttributes)
    .map((e) => e.activityTaskStartedEventAttributes!.attempt!);
  assert.ok(
    attempts.some((a) => a > 1),
    'at least one activity was retried after a kill',
  );
});

test("a machine whose cluster never answers holds no workflow task (its bootstrap data's retries wait on a timer), and a SIGTERMed worker still stops", async () => {
  // Its bootstrap data needs its cluster's secrets, and there is no such cluster: the local activity retries. The
  // path of machines whose owners render the data in a local activity (earlier builds' owners, during an upgrade).
  const handle = await h.startMachine(h.spec('du-stuck', { cluster: 'du-gone', bootstrapInProvisioning: false }));
  await until("the stuck machine's bootstrap data refused", () =>
    /createBootstrapData.*du-gone.*does not exist/.test(h.worker!.output()),
  );
  // Retried in the task it would hold the task, and a workflow task slot, for as long as the cluster is missing.
  await until(
    'a retry of the bootstrap data that waits on a timer',
    async () => (await handle.fetchHistory()).events!.some((e) => e.timerStartedEventAttributes),
    { timeoutMs: 60_000 },
  );
  const stopped = Date.now();
  h.worker!.child.kill('SIGTERM');
  const how = await Promise.race([h.worker!.exited, sleep(stopGraceMs + 15_000, 'still running')]);
  console.log(`worker stopped ${Date.now() - stopped} ms after SIGTERM`);
  assert.equal(how, '0');
  await h.startWorker();
  await handle.terminate('test: the machine of a cluster that does not exist');
});

test('a machine whose cluster never answers, its bootstrap data rendered by the provisioning call: refused with the reason, retried by Temporal, nothing created', async () => {
  const handle = await h.startMachine(h.spec('du-stuck-p', { cluster: 'du-gone-p' }));
  await until("the provisioning call's refusal", () =>
    /provisionBootstrappedMachine.*du-gone-p.*does not exist/.test(h.worker!.output()),
  );
  // A retried activity, not a local one: the machine's history holds no timer, and its workflow task is long done.
  await until('a second attempt of the provisioning call', async () => {
    const { pendingActivities } = await h.env.client.workflowService.describeWorkflowExecution({
      namespace: h.env.client.options.namespace,
      execution: { workflowId: handle.workflowId },
    });
    return (pendingActivities?.[0]?.attempt ?? 0) > 1;
  });
  const events = (await handle.fetchHistory()).events!;
  assert.ok(!events.some((e) => e.timerStartedEventAttributes || e.markerRecordedEventAttributes));
  assert.equal((await handle.query(machineStatusQuery)).phase, 'Provisioning');
  assert.equal(existsSync(machineDir(clusterDir('default', 'du-gone-p'), 'du-stuck-p')), false, 'nothing created');
  await handle.terminate('test: the machine of a cluster that does not exist');
});
