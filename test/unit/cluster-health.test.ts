import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { healthProblems } from '../../activities/health/health-problems';
import { nodesHealth } from '../../activities/health/node-health';
import { healthHeadline } from '../../src/cli/health-text';
import type { ClusterHealth, EtcdHealth } from '../../src/contract/cluster-health';
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
