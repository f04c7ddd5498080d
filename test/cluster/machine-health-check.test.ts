import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { LocalProvider } from '../../providers/local/local-provider';
import { loadManifests } from '../../src/api/load-manifests';
import type { ClusterModel } from '../../src/api/model';
import type { OwnerStatus } from '../../src/contract/owner';
import { etcdMemberNames } from '../fixtures/cluster-secrets';
import { harnessWithClient } from '../fixtures/machine-harness';
import { readyzProbe } from '../fixtures/readyz-probe';
import { until } from '../fixtures/until';

const run = promisify(execFile);
const root = join(__dirname, '../../..');
const cli = join(root, 'dist/src/cli/main.js');
const suite = harnessWithClient();
const h = suite.harness;
const provider = new LocalProvider();

/** The quickstart cluster `name` with a v1beta2 MachineHealthCheck per entry of `checks` (selector labels and spec). */
function cluster(
  name: string,
  counts: { controlPlane: number; workers: number },
  checks: { name: string; labels: Record<string, string>; spec: Record<string, unknown> }[],
): ClusterModel {
  const text =
    readFileSync(join(root, 'examples/quickstart.yaml'), 'utf8') +
    checks
      .map(
        (c) =>
          `---\n${stringify({
            apiVersion: 'cluster.x-k8s.io/v1beta2',
            kind: 'MachineHealthCheck',
            metadata: { name: c.name },
            spec: { clusterName: name, selector: { matchLabels: c.labels }, ...c.spec },
          })}`,
      )
      .join('');
  const [model] = loadManifests([{ file: 'mhc.yaml', text }], {
    CLUSTER_NAME: name,
    CONTROL_PLANE_MACHINE_COUNT: String(counts.controlPlane),
    WORKER_MACHINE_COUNT: String(counts.workers),
  });
  return model!;
}

const md = (cluster: string) => suite.client.ownerStatus('machinedeployment', 'default', `${cluster}-md-0`);
const names = (o: OwnerStatus) => o.machines.map((m) => m.name).sort();
const machineRef = (cluster: string, name: string) => ({ namespace: 'default', cluster, name });
const notReadyCheck = {
  checks: {
    unhealthyNodeConditions: [
      { type: 'Ready', status: 'Unknown', timeoutSeconds: 10 },
      { type: 'Ready', status: 'False', timeoutSeconds: 10 },
    ],
  },
};

test('MachineDeployment: a worker whose kubelet stops is seen unhealthy and replaced (worker SIGKILLed mid-remediation); above maxUnhealthy nothing is remediated until one recovers', async () => {
  await suite.client.apply([
    cluster('hc', { controlPlane: 1, workers: 3 }, [
      {
        name: 'hc-workers',
        labels: { 'cluster.x-k8s.io/deployment-name': 'hc-md-0' },
        spec: { ...notReadyCheck, remediation: { triggerIf: { unhealthyLessThanOrEqualTo: '40%' } } },
      },
    ]),
  ]);
  const ready = await suite.client.waitForCluster('default', 'hc', () => undefined, 600_000);
  assert.equal(ready.phase, 'Provisioned');
  const first = await md('hc');
  assert.deepEqual(
    [
      first.healthCheck?.name,
      first.healthCheck?.expectedMachines,
      first.healthCheck?.currentHealthy,
      first.healthCheck?.remediationAllowed,
    ],
    ['hc-workers', 3, 3, true],
  );

  // Live Node health: the machine, its search attribute and `capt get machines` follow the Node.
  const [victim, ...others] = names(first) as [string, ...string[]];
  const broken = Date.now();
  await provider.breakMachine(machineRef('hc', victim), 'kubelet');
  const unhealthy = await until("the victim's NodeHealthy to turn False", async () => {
    const [m] = await suite.client.machineStatuses('default', [victim]);
    const c = m?.conditions.find((x) => x.type === 'NodeHealthy');
    return c?.status === 'False' && c;
  });
  const seenMs = Date.now() - broken;
  assert.equal(unhealthy.reason, 'NodeNotReady');
  const machineDetails = await h.env.client.workflow
    .getHandle(`machine/default/${victim}`)
    .query<{ currentDetails: string }>('__temporal_workflow_metadata');
  assert.match(machineDetails.currentDetails, /NodeHealthy False \(NodeNotReady\): Ready=(Unknown|False) since/);
  assert.match(unhealthy.message ?? '', /Ready=(Unknown|False) since/);
  const listed = await run(process.execPath, [cli, 'get', 'machines'], {
    env: { ...process.env, TEMPORAL_ADDRESS: h.env.address },
  });
  assert.match(listed.stdout, new RegExp(`${victim}\\s.*\\sRunning\\s+False\\s`), listed.stdout);
  const byAttribute: string[] = [];
  for await (const wf of h.env.client.workflow.list({ query: 'CaptKind = "Machine" AND CaptNodeHealthy = "False"' }))
    byAttribute.push(wf.workflowId);
  assert.deepEqual(byAttribute, [`machine/default/${victim}`]);

  // The remediation starts: the worker dies right then; a new worker finishes it with exactly one replacement.
  // Recorded as the remediation starts (before its deletion is asked for), so a poll cannot miss it.
  await until('the remediation to begin', async () =>
    (await md('hc')).healthCheck?.remediations.some((r) => r.machine === victim),
  );
  await h.killWorker();
  await sleep(1000);
  await h.startWorker();
  const healed = await until('three Ready workers without the victim', async () => {
    const s = await md('hc');
    return !s.machines.some((m) => m.name === victim) && s.readyReplicas === 3 && s.machines.length === 3 && s;
  });
  const healedMs = Date.now() - broken;
  const fresh = names(healed).filter((n) => !others.includes(n));
  assert.equal(fresh.length, 1, `exactly one replacement: ${names(healed).join(', ')}`);
  assert.deepEqual(
    healed.healthCheck!.remediations.map((r) => [r.machine, r.reason]),
    [[victim, 'UnhealthyNode']],
  );
  assert.match(healed.healthCheck!.remediations[0]!.message, /^Ready=(Unknown|False) for \d+s \(timeout 10s\)$/);
  const described = await run(process.execPath, [cli, 'describe', 'cluster', 'hc'], {
    env: { ...process.env, TEMPORAL_ADDRESS: h.env.address },
  });
  assert.match(described.stdout, /MachineHealthCheck\/hc-workers \(3\/3 healthy\)/);
  assert.match(
    described.stdout,
    new RegExp(
      `Remediated:\\n  MachineDeployment/hc-md-0: ${victim} at \\S+: UnhealthyNode, Ready=\\w+ for \\d+s \\(timeout 10s\\), since \\S+ \\(MachineHealthCheck hc-workers\\)`,
    ),
  );
  const details = await h.env.client.workflow
    .getHandle('md/default/hc-md-0')
    .query<{ currentDetails: string }>('__temporal_workflow_metadata');
  assert.match(details.currentDetails, new RegExp(`Last remediation: ${victim} at`));
  console.log(
    `remediation: NotReady seen by the machine ${seenMs} ms after its kubelet stopped; replacement Ready ${healedMs} ms after`,
  );

  // Two of three at once: beyond maxUnhealthy 40% (1 of 3), nothing is remediated, and the check says so.
  const [a, b] = names(healed) as [string, string];
  await Promise.all([
    provider.breakMachine(machineRef('hc', a), 'kubelet'),
    provider.breakMachine(machineRef('hc', b), 'kubelet'),
  ]);
  const blocked = await until('remediation to be refused', async () => {
    const s = await md('hc');
    return s.healthCheck && !s.healthCheck.remediationAllowed && s.healthCheck.unhealthy.length === 2 && s;
  });
  assert.match(blocked.healthCheck!.message, /2 of 3 machines are not healthy, beyond maxUnhealthy 40%/);
  assert.equal(blocked.conditions.find((c) => c.type === 'RemediationAllowed')?.status, 'False');
  // Refused means the check has already judged both past their timeout: a remediation would start now.
  await sleep(5000);
  assert.deepEqual(names(await md('hc')), names(healed), 'nothing remediated while too many are unhealthy');

  // One recovers: the other is remediated, the recovered one stays.
  await provider.repairMachine(machineRef('hc', a), 'kubelet');
  const after = await until(`${b} replaced and ${a} kept`, async () => {
    const s = await md('hc');
    return (
      !s.machines.some((m) => m.name === b) &&
      s.machines.some((m) => m.name === a) &&
      s.readyReplicas === 3 &&
      s.machines.length === 3 &&
      s
    );
  });
  assert.deepEqual(
    after.healthCheck!.remediations.map((r) => r.machine),
    [victim, b],
  );
});

test('a machine that never gets a Node is remediated after nodeStartupTimeout', async () => {
  const model = cluster('hc', { controlPlane: 1, workers: 3 }, [
    {
      name: 'hc-workers',
      labels: { 'cluster.x-k8s.io/deployment-name': 'hc-md-0' },
      spec: { ...notReadyCheck, remediation: { triggerIf: { unhealthyLessThanOrEqualTo: '40%' } } },
    },
  ]);
  // A second MachineDeployment whose machines boot for an hour: no Node within its check's 20 s.
  const slow = structuredClone(model.machineDeployments[0]!);
  slow.name = 'hc-slow';
  slow.replicas = 1;
  slow.template.infrastructure = { ...slow.template.infrastructure, spec: { bootDelaySeconds: 3600 } };
  slow.healthCheck = { name: 'hc-slow', unhealthyNodeConditions: [], nodeStartupTimeoutSeconds: 20 };
  await suite.client.apply([{ ...model, machineDeployments: [...model.machineDeployments, slow] }]);
  const remediated = await until(
    'the machine without a Node to be remediated',
    async () => {
      const s = await suite.client.ownerStatus('machinedeployment', 'default', 'hc-slow');
      return (s.healthCheck?.remediations.length ?? 0) > 0 && s;
    },
    { timeoutMs: 180_000 },
  );
  const [r] = remediated.healthCheck!.remediations;
  assert.equal(r!.reason, 'NodeStartupTimeout');
  assert.equal(r!.message, 'no Node within nodeStartupTimeout 20s');
  assert.ok(
    Date.parse(r!.at) - Date.parse(r!.since) >= 20_000,
    `remediated ${Date.parse(r!.at) - Date.parse(r!.since)} ms after the machine was created`,
  );
  await suite.client.apply([model]);
  await until(
    'the slow MachineDeployment gone',
    async () =>
      !(await suite.client.clusterStatus('default', 'hc')).machineDeployments.some((m) => m.name === 'hc-slow'),
  );
});

test('a paused cluster carries out no scale, template change or remediation until unpaused, then all of them', async () => {
  const model = cluster('hc', { controlPlane: 1, workers: 3 }, [
    {
      name: 'hc-workers',
      labels: { 'cluster.x-k8s.io/deployment-name': 'hc-md-0' },
      spec: { ...notReadyCheck, remediation: { triggerIf: { unhealthyLessThanOrEqualTo: '40%' } } },
    },
  ]);
  const before = await md('hc');
  const changed = structuredClone(model);
  changed.annotations = { ...changed.annotations, 'cluster.x-k8s.io/paused': '' };
  changed.machineDeployments[0]!.replicas = 4;
  changed.machineDeployments[0]!.template.labels = {
    ...changed.machineDeployments[0]!.template.labels,
    tier: 'paused-test',
  };
  // The annotation is what the loader reads into paused; the model carries the result.
  changed.paused = true;
  await suite.client.apply([changed]);
  const [broken] = names(before) as [string];
  await provider.breakMachine(machineRef('hc', broken), 'kubelet');
  const held = await until(
    'the machine seen unhealthy while paused',
    async () => {
      const s = await md('hc');
      return s.machines.find((m) => m.name === broken)?.node && s.stepReason === 'ClusterPaused' && s;
    },
    { timeoutMs: 120_000 },
  );
  // Past the 10 s Ready timeout, counted from the Node's transition, which came before it was seen.
  await sleep(12_000);
  const view = await suite.client.clusterStatus('default', 'hc');
  assert.equal(view.paused, true);
  assert.deepEqual(
    view.pending.map((p) => [p.name, p.reason]),
    [['hc-md-0', 'ClusterPaused']],
  );
  assert.deepEqual(names(await md('hc')), names(before), 'no machine created, deleted or remediated while paused');
  assert.equal(held.replicas, 4, 'the scale is recorded, not carried out');
  const listed = await run(process.execPath, [cli, 'get', 'clusters'], {
    env: { ...process.env, TEMPORAL_ADDRESS: h.env.address },
  });
  assert.match(
    listed.stdout,
    /hc\s+Provisioning \(paused\)/,
    'the scale to 4 is not carried out, and get says the cluster is paused',
  );

  await suite.client.apply([{ ...changed, annotations: model.annotations, paused: false }]);
  const resumed = await until('four Ready workers, the broken one replaced', async () => {
    const s = await md('hc');
    return !s.machines.some((m) => m.name === broken) && s.machines.length === 4 && s.readyReplicas === 4 && s;
  });
  assert.equal(resumed.healthCheck!.remediations.at(-1)!.machine, broken);
  const labelled = await suite.client.machineStatuses('default', names(resumed));
  assert.deepEqual(
    labelled.map((m) => m.labels.tier),
    ['paused-test', 'paused-test', 'paused-test', 'paused-test'],
    'the template change reached every machine',
  );
  await suite.client.deleteCluster('default', 'hc');
  await suite.client.waitForDeletion('default', 'hc', () => undefined, 300_000);
});

test('control plane: one of three machines stopped is remediated (etcd members = machines, readyz through the endpoint answering); its last machine is not, and it says why', async () => {
  const kcp = 'hcp-control-plane';
  await suite.client.apply([
    cluster('hcp', { controlPlane: 3, workers: 0 }, [
      {
        name: 'hcp-cp',
        labels: { 'cluster.x-k8s.io/control-plane-name': kcp },
        spec: { checks: { unhealthyNodeConditions: [{ type: 'Ready', status: 'Unknown', timeoutSeconds: 10 }] } },
      },
    ]),
  ]);
  const ready = await suite.client.waitForCluster('default', 'hcp', () => undefined, 600_000);
  assert.equal(ready.phase, 'Provisioned');
  const cp = () => suite.client.ownerStatus('kubeadmcontrolplane', 'default', kcp);
  const before = names(await cp());
  const probe = readyzProbe(ready.endpoint);
  const victim = before[1]!;
  const stopped = Date.now();
  await provider.breakMachine(machineRef('hcp', victim), 'all');
  const healed = await until(
    'the stopped control-plane machine replaced',
    async () => {
      const s = await cp();
      return !s.machines.some((m) => m.name === victim) && s.readyReplicas === 3 && s.machines.length === 3 && s;
    },
    { timeoutMs: 300_000 },
  );
  const availability = await probe.stop();
  console.log(
    `control-plane remediation: replacement Ready ${Date.now() - stopped} ms after the machine stopped; ${availability.probes} readyz probes through the endpoint, ${availability.failures} failed (${availability.reasons.join(' | ')}), worst gap ${availability.worstGapMs} ms`,
  );
  // Stopping etcd's leader costs an election, and the dying apiserver stays in the pool for two failed
  // checks: one run saw 4.7 s. A backend left in service, or etcd without quorum, would go far beyond.
  assert.ok(
    availability.worstGapMs < 8000,
    `the endpoint answered throughout: worst gap ${availability.worstGapMs} ms`,
  );
  assert.deepEqual(
    healed.healthCheck!.remediations.map((r) => [r.machine, r.reason]),
    [[victim, 'UnhealthyNode']],
  );
  assert.equal(names(healed).filter((n) => !before.includes(n)).length, 1, 'one replacement');
  const members = await etcdMemberNames(
    suite.client.client,
    'default',
    'hcp',
    healed.machines.map((m) => m.address),
  );
  assert.deepEqual(
    members,
    names(healed),
    "etcd members = machines: the stopped machine's member is gone, the replacement's joined",
  );

  // The last machine: unhealthy, but removing it would leave etcd with no member.
  await suite.client.scale('kubeadmcontrolplane', 'default', kcp, 1);
  const one = await until(
    'one control-plane machine',
    async () => {
      const s = await cp();
      return s.machines.length === 1 && s.readyReplicas === 1 && s;
    },
    { timeoutMs: 300_000 },
  );
  const last = one.machines[0]!.name;
  await provider.breakMachine(machineRef('hcp', last), 'kubelet');
  const refused = await until(
    'remediation of the last machine refused',
    async () => {
      const s = await cp();
      return s.stepReason === 'RemediationBlocked' && s.healthCheck && !s.healthCheck.remediationAllowed && s;
    },
    { timeoutMs: 120_000 },
  );
  assert.match(
    refused.healthCheck!.message,
    new RegExp(`${last} is unhealthy .* but is the only control-plane machine`),
  );
  assert.match(refused.step, /only control-plane machine/);
  await sleep(5000);
  assert.deepEqual(names(await cp()), [last], 'nothing remediated');
  await provider.repairMachine(machineRef('hcp', last));
  await suite.client.deleteCluster('default', 'hcp');
  await suite.client.waitForDeletion('default', 'hcp', () => undefined, 300_000);
});

/** The etcd members of a cluster, asked of its control-plane machines in turn. */
