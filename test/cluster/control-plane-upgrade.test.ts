import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { etcdClientTLS } from '../../activities/etcd/etcd-credentials';
import { listMembers } from '../../activities/etcd/etcd-client';
import { httpsGet } from '../../src/util/https-probe';
import { loadManifests } from '../../src/api/load-manifests';
import type { ClusterModel } from '../../src/api/model';
import { failedMachines, RejectedError } from '../../src/client/capt-client';
import { availableKubernetesVersions } from '../../src/tools';
import type { ClusterView } from '../../src/contract/cluster';
import { harnessWithClient } from '../fixtures/machine-harness';

const [older, newer] = availableKubernetesVersions() as [string, string];
const suite = harnessWithClient();
const h = suite.harness;

const status = () => suite.client.clusterStatus('default', 'up');

/**
 * Polls /readyz through the control-plane endpoint every 200 ms, as a client with a 5 s timeout; reports
 * failures (an error or a non-200 answer) and the worst gap between successes (slow answers show there).
 */
function readyzProbe(endpoint: string) {
  let running = true;
  let failures = 0;
  let probes = 0;
  let lastOk = Date.now();
  let worstGapMs = 0;
  const reasons: string[] = [];
  const done = (async () => {
    while (running) {
      probes++;
      const answer = await httpsGet(`https://${endpoint}/readyz`, { insecure: true }, 5000).then((r) => (r.status === 200 ? 'ok' : `HTTP ${r.status}: ${r.body.split('\n').filter((l) => l.includes('failed')).join(' ')}`), (err: Error) => err.message);
      if (answer === 'ok') {
        worstGapMs = Math.max(worstGapMs, Date.now() - lastOk);
        lastOk = Date.now();
      } else {
        failures++;
        if (reasons.length < 5) reasons.push(answer);
      }
      await sleep(200);
    }
  })();
  return { stop: async () => { running = false; await done; return { probes, failures, worstGapMs, reasons }; } };
}

/** What the workload cluster itself says of its control plane: etcd's members, and each machine's apiserver version. */
async function observe(s: ClusterView): Promise<{ members: string[]; versions: Record<string, string> }> {
  const machines = s.controlPlane!.machines;
  const tls = await etcdClientTLS('default', 'up');
  let members: string[] = [];
  for (const m of machines) {
    members = await listMembers(`https://${m.address}:2379`, tls).then((list) => list.map((x) => x.name).sort(), () => []);
    if (members.length) break;
  }
  const versions: Record<string, string> = {};
  for (const m of machines) versions[m.name] = JSON.parse((await httpsGet(`https://${m.address}:6443/version`, { insecure: true })).body).gitVersion;
  return { members, versions };
}

/** A settled step: every control-plane machine Running and none leaving; its key names the machines and versions. */
function settledKey(s: ClusterView): string | undefined {
  const machines = s.controlPlane!.machines;
  return machines.every((m) => m.phase === 'Running' && !m.deleting) ? machines.map((m) => `${m.name}@${m.version}`).sort().join(',') : undefined;
}

/**
 * Waits for the control plane to settle on `version` with 3 machines, and checks the real cluster at every
 * settled step on the way (a join done, a removal done): etcd's members are exactly the machines, and each
 * machine's apiserver answers with the machine's version. A check counts only if the step had not moved on
 * while etcd and the apiservers were read.
 */
async function rollTo(version: string, during?: () => Promise<void>): Promise<{ final: ClusterView; steps: string[] }> {
  const checked: string[] = [];
  let duringDone = !during;
  for (const deadline = Date.now() + 600_000; Date.now() < deadline; await sleep(300)) {
    const s = await status();
    const key = settledKey(s);
    if (key && !checked.includes(key)) {
      const seen = await observe(s);
      if (settledKey(await status()) === key) {
        const machines = s.controlPlane!.machines;
        assert.deepEqual(seen.members, machines.map((m) => m.name).sort(), `etcd members equal the machines at step ${checked.length} (${key})`);
        for (const m of machines) assert.equal(seen.versions[m.name], m.version, `apiserver of ${m.name} runs ${m.version} at step ${checked.length}`);
        checked.push(key);
      }
    }
    if (!duringDone && checked.length >= 3) {
      duringDone = true;
      await during!();
    }
    const cp = s.controlPlane!;
    if (key && checked.includes(key) && cp.machines.length === 3 && cp.machines.every((m) => m.version === version) && cp.updatedReplicas === 3) return { final: s, steps: checked };
  }
  throw new Error(`control plane did not reach ${version}; steps checked: ${checked.join(' | ')}`);
}

test(`control plane upgrade ${older} -> ${newer}: etcd members right after every step, endpoint answering, worker killed mid-way; undo; bad versions refused`, async () => {
  const text = readFileSync(join(__dirname, '../../../examples/quickstart.yaml'), 'utf8');
  const [model] = loadManifests([{ file: 'quickstart.yaml', text }], { CLUSTER_NAME: 'up', CONTROL_PLANE_MACHINE_COUNT: '3', WORKER_MACHINE_COUNT: '1', KUBERNETES_VERSION: older });
  await suite.client.apply([model!]);
  const ready = await suite.client.waitForCluster('default', 'up', () => undefined, 600_000);
  assert.equal(ready.phase, 'Provisioned', failedMachines(ready));
  const initial = await observe(ready);
  assert.deepEqual(initial.members, ready.controlPlane!.machines.map((m) => m.name).sort());

  const probe = readyzProbe(ready.endpoint);
  const upgraded: ClusterModel = { ...model!, controlPlane: { ...model!.controlPlane, version: newer } };
  // The probe stops whatever happens, so a failed step ends the test instead of leaving it polling.
  const { done, steps, availability } = await (async () => {
    try {
      assert.deepEqual((await suite.client.apply([upgraded])).map((o) => o.outcome), ['unchanged', 'configured', 'unchanged'], 'only the control plane is configured');
      const rolled = await rollTo(newer, async () => {
        await h.killWorker();
        await sleep(1000);
        await h.startWorker();
      });
      return { done: rolled.final, steps: rolled.steps, availability: await probe.stop() };
    } finally {
      await probe.stop();
    }
  })();
  // 3 machines replaced one at a time: each join leaves 4 machines for at least the 3 s the endpoint drains,
  // so all three are checked; the 3-machine states between may pass too quickly for the poll, but the last one stays.
  assert.equal(steps.filter((k) => k.split(',').length === 4).length, 3, `every join checked against the real cluster: ${steps.join(' | ')}`);
  assert.ok(steps.at(-1)!.split(',').every((m) => m.endsWith(`@${newer}`)), 'and the final state');
  console.log(`upgrade: ${steps.length} steps checked against etcd and the apiservers; ${availability.probes} readyz probes through the endpoint, ${availability.failures} failed, worst gap ${availability.worstGapMs} ms; failures: ${availability.reasons.join(' | ')}`);
  assert.equal(availability.failures, 0, `no probe failed (${availability.failures} of ${availability.probes}: ${availability.reasons.join(' | ')})`);
  assert.ok(availability.worstGapMs < 5000, `the endpoint never went 5 s without a successful answer (worst gap ${availability.worstGapMs} ms)`);
  assert.equal(done.controlPlane!.machines.length, 3, 'exactly 3 machines at the end');

  const tooFar: ClusterModel = { ...upgraded, controlPlane: { ...upgraded.controlPlane, version: 'v1.38.0' } };
  await assert.rejects(suite.client.apply([tooFar]), (err: Error) => err instanceof RejectedError && /cannot update Kubernetes version from v1\.36\.3 to v1\.38\.0/.test(err.message));
  await assert.rejects(suite.client.apply([model!]), (err: Error) => err instanceof RejectedError && new RegExp(`cannot update Kubernetes version from ${newer} to ${older}: downgrades are not supported`).test(err.message));

  const history = await suite.client.rolloutHistory('kubeadmcontrolplane', 'default', 'up-control-plane');
  assert.deepEqual(history.map((r) => [r.revision, r.version]), [[1, older], [2, newer]]);
  await assert.rejects(suite.client.rolloutUndo('kubeadmcontrolplane', 'default', 'up-control-plane', 7), (err: Error) => err instanceof RejectedError && /has no revision 7; revisions: 1, 2/.test(err.message));
  const undo = await suite.client.rolloutUndo('kubeadmcontrolplane', 'default', 'up-control-plane');
  assert.equal(undo.revision, 3);
  const { final: undone } = await rollTo(older);
  assert.ok(undone.controlPlane!.machines.every((m) => m.version === older));
  assert.deepEqual((await suite.client.rolloutHistory('kubeadmcontrolplane', 'default', 'up-control-plane')).map((r) => [r.revision, r.version]), [[2, newer], [3, older]], 'undo re-applies revision 1 as revision 3');

  await suite.client.deleteCluster('default', 'up');
  await suite.client.waitForDeletion('default', 'up', () => undefined, 300_000);
});
