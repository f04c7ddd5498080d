import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { clusterSecretsQuery } from '../../src/contract/cluster-messages';
import { coreTaskQueue } from '../../src/contract/task-queues';
import { queryWithRetry } from '../../src/client/query-with-retry';
import { describeCaptDeployment } from '../../src/client/worker-deployment';
import { buildIdOf } from '../../src/worker/workflow-build';
import { harnessWithClient } from '../fixtures/machine-harness';
import type { WorkerProcess } from '../fixtures/worker-process';
import { clusterSecretsStandIn } from '../workflows/harness-workflows';

const suite = harnessWithClient();
const h = suite.harness;
const others: WorkerProcess[] = [];
after(() => Promise.all(others.map((w) => w.stop())));

/** Another build of the harness's workflows: the same code with a comment in front (the source map must stay last). */
async function otherBuild(name: string): Promise<{ path: string; buildId: string }> {
  const code = `// build ${name}\n${await readFile(h.bundlePath, 'utf8')}`;
  const path = join(h.home, `workflow-bundle-${name}.js`);
  await writeFile(path, code);
  return { path, buildId: buildIdOf(code) };
}

test("a new build of `capt worker` joins without taking over; capt dev's worker (CAPT_WORKER_MAKE_CURRENT) becomes current and takes over the runs of the build before it", async () => {
  const a = buildIdOf(await readFile(h.bundlePath, 'utf8'));
  const handle = await h.env.client.workflow.start(clusterSecretsStandIn, {
    taskQueue: coreTaskQueue,
    workflowId: 'cluster/default/takeover',
    args: [{ endpoint: '127.0.0.1:6443', secrets: {} as never }],
  });
  assert.equal((await handle.query(clusterSecretsQuery))?.endpoint, '127.0.0.1:6443');

  const b = await otherBuild('b');
  const plain = await h.spawnWorker({ bundlePath: b.path });
  others.push(plain);
  assert.match(
    plain.output(),
    new RegExp(`capt worker ready: build ${b.buildId} \\(not current: new workflows run on ${a};`),
  );
  assert.equal((await describeCaptDeployment(h.env.client.workflowService, 'default'))?.current, a);
  await plain.stop();

  // As after `capt dev stop`, a rebuild and `capt dev start`: build A's worker is gone and C's is the only one.
  await h.worker!.stop();
  const c = await otherBuild('c');
  others.push(await h.spawnWorker({ bundlePath: c.path, env: { CAPT_WORKER_MAKE_CURRENT: '1' } }));
  assert.match(others.at(-1)!.output(), new RegExp(`capt worker ready: build ${c.buildId} \\(the current build\\)`));
  assert.equal((await describeCaptDeployment(h.env.client.workflowService, 'default'))?.current, c.buildId);
  const { raw } = await handle.describe();
  assert.equal(
    raw.workflowExecutionInfo?.versioningInfo?.versioningOverride?.autoUpgrade,
    true,
    'the run of build A follows the current build',
  );
  // Only a worker of C is left to answer. A query sent within 10 s of A's last poll can still be handed to
  // A's sticky queue and time out there, which the server then stops doing: ask again as `capt` would.
  assert.equal((await queryWithRetry(handle, clusterSecretsQuery))?.endpoint, '127.0.0.1:6443');
  await handle.terminate();
});
