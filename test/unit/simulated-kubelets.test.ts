import assert from 'node:assert/strict';
import { mock, test } from 'node:test';
import type { KubeletRegistration } from '../../providers/local/layout';
import type { KubeletApi } from '../../providers/local/kubelet/kube-api';
import { SimulatedKubelets } from '../../providers/local/kubelet/simulated-kubelets';

const registration = (nodeName: string): KubeletRegistration => ({
  nodeName,
  providerID: `capt://${nodeName}`,
  kubeletVersion: 'v1.36.3',
  ip: '127.0.0.1',
  labels: {},
  taints: [],
});

/** An apiserver that records each write as `METHOD node|lease NAME`, in the order the writes were made. */
function fakeApi() {
  const writes: string[] = [];
  const call = async (method: string, path: string, body?: { metadata?: { name?: string } }) => {
    await Promise.resolve();
    if (method === 'GET') return { items: [] };
    const name = body?.metadata?.name ?? path.split('/').at(-2)!;
    writes.push(`${method} ${path.includes('/leases') ? 'lease' : 'node'} ${name}`);
    return body;
  };
  return { api: { call } as unknown as KubeletApi, writes };
}

test('simulated kubelets: a Lease close to expiry is renewed before a new Node registers, a fresh one after it', async () => {
  mock.timers.enable({ apis: ['Date'], now: Date.parse('2026-11-28T00:00:00Z') });
  try {
    const { api, writes } = fakeApi();
    const kubelets = new SimulatedKubelets(api);
    await kubelets.sync([registration('old')]);
    assert.deepEqual(writes, ['POST node old', 'POST lease old']);

    // 12 s on, old's Lease (40 s) can wait for a new Node, wanted within a renewal period (10 s).
    writes.length = 0;
    mock.timers.tick(12_000);
    await kubelets.sync([registration('old'), registration('new')]);
    assert.deepEqual(writes.slice(0, 2), ['POST node new', 'PUT lease old']);

    // 35 s after its last renewal, old's Lease goes before the next new Node.
    writes.length = 0;
    mock.timers.tick(35_000);
    await kubelets.sync([registration('old'), registration('new'), registration('newer')]);
    assert.deepEqual(writes.slice(0, 2), ['PUT lease old', 'PUT lease new']);
    assert.ok(writes.indexOf('POST node newer') > writes.indexOf('PUT lease new'), writes.join(', '));
  } finally {
    mock.timers.reset();
  }
});
