import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { healthProblems } from '../../activities/health/health-problems';
import { nodesHealth } from '../../activities/health/node-health';
import { healthHeadline } from '../../src/cli/health-text';
import {
  machinePoolHealth,
  type ClusterHealth,
  type EtcdHealth,
  type MachinePoolHealth,
} from '../../src/contract/cluster-health';
import type { Remediation } from '../../src/contract/health-check';
import type { MachineRecord } from '../../src/contract/owner';
import { parseQuantity } from '../../src/kube/quantity';

const node = (name: string, ready: string, extra: { type: string; status: string }[] = []): V1Node => ({
  metadata: { name },
  status: {
    allocatable: { cpu: '4', memory: '16Gi', pods: '110' },
    conditions: [
      {
        type: 'Ready',
        status: ready,
        reason: ready === 'Unknown' ? 'NodeStatusUnknown' : 'KubeletReady',
        message: 'Kubelet stopped posting node status.',
      },
      ...extra,
    ],
  },
});
const pod = (nodeName: string, cpu: string, memory: string, init?: string): V1Pod => ({
  metadata: { name: `p-${nodeName}-${cpu}` },
  spec: {
    nodeName,
    containers: [{ name: 'a', resources: { requests: { cpu, memory } } }],
    ...(init ? { initContainers: [{ name: 'i', resources: { requests: { cpu: init } } }] } : {}),
  },
});

const healthyEtcd: EtcdHealth = {
  members: [{ name: 'cp-0', id: '1', healthy: true, leader: true }],
  leader: 'cp-0',
  machines: ['cp-0'],
  membersMatchMachines: true,
};
const ok = { ok: true };
const parts = (overrides: Partial<ClusterHealth> = {}) => ({
  endpoint: { address: '127.1.0.1:6443', readyz: ok },
  controlPlane: [{ machine: 'cp-0', address: '127.1.0.2', apiserver: ok, controllerManager: ok, scheduler: ok }],
  etcd: healthyEtcd,
  machinePools: [] as MachinePoolHealth[],
  nodes: nodesHealth([node('cp-0', 'True')], []),
  systemPods: { total: 0, problems: [], problemsOmitted: 0 },
  ...overrides,
});

test('parseQuantity reads Kubernetes quantities: milli-cores, binary and decimal suffixes, exponents; NaN otherwise', () => {
  assert.deepEqual(['250m', '4', '16Gi', '1.5G', '2e3', '128Mi', '100k'].map(parseQuantity), [
    0.25,
    4,
    16 * 2 ** 30,
    1.5e9,
    2000,
    128 * 2 ** 20,
    1e5,
  ]);
  assert.ok(Number.isNaN(parseQuantity('12 apples')));
});

test('nodesHealth: not Ready and under pressure are listed with every condition; requests against allocatable per Node and in all; lists capped', () => {
  const nodes = [
    node('a', 'True'),
    node('b', 'Unknown'),
    node('c', 'True', [{ type: 'DiskPressure', status: 'True' }]),
  ];
  const h = nodesHealth(nodes, [pod('a', '1', '1Gi'), pod('a', '500m', '1Gi', '2'), pod('c', '100m', '0')]);
  assert.equal(h.total, 3);
  assert.equal(h.ready, 2);
  assert.deepEqual(
    h.unhealthy.map((n) => [n.name, n.conditions.map((c) => `${c.type}=${c.status}`)]),
    [
      ['b', ['Ready=Unknown']],
      ['c', ['Ready=True', 'DiskPressure=True']],
    ],
  );
  // a: 1 + max(0.5, init 2) = 3 of 4 cores; 2 of 110 pods.
  assert.deepEqual(h.mostAllocated[0], {
    name: 'a',
    allocations: [
      { resource: 'cpu', requested: 3, allocatable: 4, percent: 75 },
      { resource: 'memory', requested: 2 * 2 ** 30, allocatable: 16 * 2 ** 30, percent: 13 },
      { resource: 'pods', requested: 2, allocatable: 110, percent: 2 },
    ],
  });
  assert.deepEqual(
    h.allocated.find((a) => a.resource === 'cpu'),
    { resource: 'cpu', requested: 3.1, allocatable: 12, percent: 26 },
  );
  const many = nodesHealth(
    Array.from({ length: 1000 }, (_, i) => node(`n-${String(i).padStart(4, '0')}`, 'Unknown')),
    [],
  );
  assert.equal(many.unhealthy.length, 20);
  assert.equal(many.unhealthyOmitted, 980);
  const report = {
    namespace: 'default',
    cluster: 'big',
    checkedAt: '',
    healthy: false,
    ...healthProblems(parts({ nodes: many })),
    ...parts({ nodes: many }),
  };
  const size = JSON.stringify(report).length;
  assert.ok(size < 20_000, `a whole report of 1000 NotReady Nodes stays small: ${size} bytes`);
});

test('healthProblems: etcd first, then apiservers, components, Nodes; the headline names the first three and counts the rest', () => {
  assert.deepEqual(healthProblems(parts()), { problems: [], problemsOmitted: 0 });
  const down = { ok: false, detail: 'connection refused (not running)' };
  const broken = parts({
    etcd: {
      ...healthyEtcd,
      members: [{ name: 'cp-0', id: '1', healthy: false, detail: 'does not answer' }],
      error: 'no etcd member answered the member list',
      leader: undefined,
    },
    controlPlane: [
      {
        machine: 'cp-0',
        address: '127.1.0.2',
        apiserver: { ok: false, detail: 'HTTP 500: etcd failed' },
        controllerManager: ok,
        scheduler: down,
      },
    ],
    nodes: nodesHealth([node('cp-0', 'True'), node('md-0', 'Unknown')], []),
  });
  const { problems } = healthProblems(broken);
  assert.deepEqual(
    problems.map((p) => [p.part, p.subject]),
    [
      ['etcd', 'cp-0'],
      ['kube-apiserver', 'cp-0'],
      ['kube-scheduler', 'cp-0'],
      ['nodes', 'md-0'],
    ],
  );
  assert.deepEqual(
    problems.map((p) => p.message),
    [
      'etcd member cp-0 is unhealthy: does not answer',
      'kube-apiserver on cp-0: HTTP 500: etcd failed',
      'kube-scheduler on cp-0: connection refused (not running)',
      'node md-0 is NotReady: Ready Unknown (NodeStatusUnknown: Kubelet stopped posting node status.)',
    ],
  );
  const report = {
    namespace: 'default',
    cluster: 'h',
    checkedAt: '',
    healthy: false,
    problems,
    problemsOmitted: 0,
    ...broken,
  };
  assert.equal(
    healthHeadline(report),
    'cluster default/h: unhealthy: etcd member cp-0 is unhealthy: does not answer; kube-apiserver on cp-0: HTTP 500: etcd failed; kube-scheduler on cp-0: connection refused (not running) (and 1 more)',
  );
});

test('healthProblems: etcd members that are not the machines name the odd one; no leader is a problem', () => {
  const etcd: EtcdHealth = {
    members: [
      { name: 'cp-0', id: '1', healthy: true },
      { name: 'cp-old', id: '2', healthy: true },
    ],
    machines: ['cp-0'],
    membersMatchMachines: false,
  };
  assert.deepEqual(healthProblems(parts({ etcd })).problems, [
    { part: 'etcd', message: 'etcd has no leader' },
    {
      part: 'etcd',
      subject: 'cp-old',
      message: 'etcd members [cp-0, cp-old] are not the control-plane machines [cp-0]',
    },
  ]);
});

const t0 = Date.parse('2026-01-01T00:00:00Z');
const at = (seconds: number) => new Date(t0 + seconds * 1000).toISOString();
const machine = (name: string, createdSecond: number, fields: Partial<MachineRecord> = {}): MachineRecord => ({
  name,
  templateHash: 'h',
  version: 'v1.35.0',
  createdAt: at(createdSecond),
  phase: 'Provisioned',
  deleting: false,
  marked: false,
  sequence: 1,
  ...fields,
});
const remediation = (m: string, second: number) => ({
  machine: m,
  reason: 'NodeStartupTimeout' as const,
  message: 'no Node within nodeStartupTimeout 60s',
  since: at(second - 60),
  at: at(second),
});
const report = (pools: MachinePoolHealth[]): ClusterHealth => {
  const p = parts({ machinePools: pools });
  const { problems, problemsOmitted } = healthProblems(p);
  return {
    namespace: 'default',
    cluster: 'c',
    checkedAt: '',
    healthy: problems.length === 0,
    problems,
    problemsOmitted,
    ...p,
  };
};

test('machinePoolHealth: Nodes counted against the machines asked for; machines past their startup timeout; remediations under way', () => {
  const check = { nodeStartupTimeoutSeconds: 60, remediations: [] as Remediation[] };
  // Running with a Node; Running but its Node deleted; Running but leaving: only the first has a Node that counts.
  const running = [
    machine('w-a', 0, { phase: 'Running' }),
    machine('w-b', 0, { phase: 'Running', node: { conditions: [], gone: true } }),
    machine('w-c', 0, { phase: 'Running', deleting: true }),
  ];
  const full = machinePoolHealth(
    { kind: 'MachineDeployment', name: 'w', replicas: 1, machines: running.slice(0, 1) },
    t0,
  );
  assert.deepEqual([full.withNode, full.pastStartup, full.remediating], [1, 0, []]);
  const short = machinePoolHealth({ kind: 'MachineDeployment', name: 'w', replicas: 3, machines: running }, t0);
  assert.equal(short.withNode, 1);
  assert.equal(short.nodeStartupTimeoutSeconds, 600, "Cluster API's default without a health check");

  // Two machines that never boot, made at 0 s and 30 s, under a 60 s startup timeout: at 61 s the first is past it.
  const booting = [machine('md-1-a', 0), machine('md-1-b', 30, { phase: 'Provisioning' })];
  const pool = (nowSecond: number, machines = booting, remediations = check.remediations) =>
    machinePoolHealth(
      { kind: 'MachineDeployment', name: 'md-1', replicas: 2, machines, healthCheck: { ...check, remediations } },
      t0 + nowSecond * 1000,
    );
  assert.deepEqual([pool(60).pastStartup, pool(61).pastStartup, pool(61).pastStartupMachines], [0, 1, ['md-1-a']]);
  assert.deepEqual(pool(91).pastStartupMachines, ['md-1-a', 'md-1-b']);

  // Remediated at 61 s and 91 s: md-1-a still deleting, md-1-b gone and replaced by md-1-d (no Node yet).
  const remediated = [
    machine('md-1-a', 0, { deleting: true }),
    machine('md-1-c', 61),
    machine('md-1-d', 91, { phase: 'Provisioning' }),
  ];
  const loop = pool(100, remediated, [remediation('md-1-a', 61), remediation('md-1-b', 91)]);
  assert.deepEqual(
    [loop.withNode, loop.pastStartup, loop.remediating.map((r) => r.machine)],
    [0, 0, ['md-1-a', 'md-1-b']],
  );
  // Once the replacements have their Nodes and the remediated machine is gone, nothing is under way.
  const healed = [machine('md-1-c', 61, { phase: 'Running' }), machine('md-1-d', 91, { phase: 'Running' })];
  assert.deepEqual(pool(200, healed, [remediation('md-1-a', 61), remediation('md-1-b', 91)]).remediating, []);
  // A scale-up long after a remediation is not its replacement.
  const later = [...healed, machine('md-1-e', 3600)];
  assert.deepEqual(pool(3610, later, [remediation('md-1-b', 91)]).remediating, []);

  // 1000 machines that never boot: counts, and three names.
  const many = Array.from({ length: 1000 }, (_, i) => machine(`big-${String(i).padStart(4, '0')}`, 0));
  const big = machinePoolHealth(
    { kind: 'MachineDeployment', name: 'big', replicas: 1000, machines: many },
    t0 + 601_000,
  );
  assert.deepEqual([big.pastStartup, big.pastStartupMachines], [1000, ['big-0000', 'big-0001', 'big-0002']]);
  assert.ok(JSON.stringify(big).length < 1000, `a pool's health stays small: ${JSON.stringify(big).length} bytes`);
});

test('healthProblems: a pool short of its Nodes, machines past their startup timeout and remediations make the cluster unhealthy, named on the first line before the Nodes', () => {
  const fine: MachinePoolHealth = {
    kind: 'MachineDeployment',
    name: 'md-0',
    replicas: 3,
    withNode: 3,
    nodeStartupTimeoutSeconds: 600,
    pastStartup: 0,
    pastStartupMachines: [],
    remediating: [],
  };
  assert.equal(report([fine]).healthy, true);
  // The cluster: every Node Ready, but md-1 has none of its 2 machines with a Node and remediates them over and over.
  const md1: MachinePoolHealth = {
    ...fine,
    name: 'md-1',
    replicas: 2,
    withNode: 0,
    nodeStartupTimeoutSeconds: 60,
    pastStartup: 2,
    pastStartupMachines: ['md-1-x', 'md-1-y'],
    remediating: [{ machine: 'md-1-abc', reason: 'NodeStartupTimeout' }],
  };
  const sick = report([fine, md1]);
  assert.equal(sick.healthy, false);
  assert.equal(sick.nodes.ready, sick.nodes.total);
  assert.equal(
    healthHeadline(sick),
    'cluster default/c: unhealthy: MachineDeployment md-1 has 0/2 Nodes; ' +
      'MachineDeployment md-1: 2 machines without a Node past their startup timeout (60s): md-1-x, md-1-y; ' +
      'MachineDeployment md-1 is remediating md-1-abc (NodeStartupTimeout)',
  );
  assert.deepEqual(
    sick.problems.map((p) => [p.part, p.subject]),
    [
      ['machines', 'md-1'],
      ['machines', 'md-1'],
      ['machines', 'md-1'],
    ],
  );
  // Each alone is a problem; several pools short are all named before any pool's detail; a broken Node comes after.
  assert.equal(report([{ ...fine, pastStartup: 1, pastStartupMachines: ['md-0-a'] }]).healthy, false);
  assert.equal(report([{ ...fine, remediating: [{ machine: 'md-0-a', reason: 'UnhealthyNode' }] }]).healthy, false);
  const cp: MachinePoolHealth = { ...fine, kind: 'KubeadmControlPlane', name: 'cp', withNode: 2 };
  const p = parts({ machinePools: [cp, md1], nodes: nodesHealth([node('cp-0', 'True'), node('md-0', 'Unknown')], []) });
  assert.deepEqual(
    healthProblems(p).problems.map((x) => x.message.split(':')[0]),
    [
      'KubeadmControlPlane cp has 2/3 Nodes',
      'MachineDeployment md-1 has 0/2 Nodes',
      'MachineDeployment md-1',
      'MachineDeployment md-1 is remediating md-1-abc (NodeStartupTimeout)',
      'node md-0 is NotReady',
    ],
  );
  // The standalone Machines, and an owner whose status could not be read.
  const standalone: MachinePoolHealth = { ...fine, kind: 'Machine', name: 'c', replicas: 2, withNode: 1 };
  const unread: MachinePoolHealth = { ...fine, withNode: 0, error: 'workflow md/default/md-0 not found' };
  assert.deepEqual(
    report([unread, standalone]).problems.map((x) => x.message),
    [
      'MachineDeployment md-0: its machines could not be read: workflow md/default/md-0 not found',
      'standalone Machines have 1/2 Nodes',
    ],
  );
  // 1000 machines past their startup timeout: three named, the rest counted.
  const stuck = report([{ ...md1, pastStartup: 1000, pastStartupMachines: ['a', 'b', 'c'], remediating: [] }]);
  assert.equal(
    stuck.problems[1]!.message,
    'MachineDeployment md-1: 1000 machines without a Node past their startup timeout (60s): a, b, c and 997 more',
  );
  // 1000 pools short: the first line names three and counts the rest.
  const pools = Array.from({ length: 1000 }, (_, i) => ({ ...md1, name: `p-${i}`, pastStartup: 0, remediating: [] }));
  const wide = report(pools);
  assert.equal(wide.problems.length + wide.problemsOmitted, 1000);
  assert.match(
    healthHeadline(wide),
    /^cluster default\/c: unhealthy: MachineDeployment p-0 has 0\/2 Nodes; .* \(and 997 more\)$/,
  );
});
