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

/** An apiserver that records each write's target and renewTime, and takes `callMs` of the (mocked) clock per call. */
function fakeApi(callMs: () => number) {
  const writes: { method: string; name: string; renewTime?: string }[] = [];
  const api = {
    call: async (
      method: string,
      path: string,
      body?: { metadata?: { name?: string }; spec?: { renewTime?: string } },
    ) => {
      await Promise.resolve();
      mock.timers.tick(callMs());
      if (method === 'GET') return { items: [] };
      const name = body?.metadata?.name ?? path.split('/').at(-2)!;
      writes.push({
        method: `${method} ${path.includes('/leases') ? 'lease' : 'node'}`,
        name,
        renewTime: body?.spec?.renewTime,
      });
      return body;
    },
  };
  return { api: api as unknown as KubeletApi, writes };
}

test('simulated kubelets: a Lease close to expiry is renewed before a new Node registers, each write carries its own time, and a pass that runs out of time leaves the rest to the next, most urgent first', async () => {
  mock.timers.enable({ apis: ['Date'], now: Date.parse('2026-11-28T00:00:00Z') });
  try {
    let callMs = 0;
    const { api, writes } = fakeApi(() => callMs);
    const kubelets = new SimulatedKubelets(api);
    await kubelets.sync([registration('old')]);
    assert.deepEqual(
      writes.map((w) => `${w.method} ${w.name}`),
      ['POST node old', 'POST lease old'],
    );

    // 35 s on, old's Lease (40 s) is more urgent than registering new (wanted within a renewal period).
    writes.length = 0;
    mock.timers.tick(35_000);
    await kubelets.sync([registration('old'), registration('new')]);
    assert.deepEqual(writes.map((w) => `${w.method} ${w.name}`).slice(0, 2), ['PUT lease old', 'POST node new']);

    // 400 Nodes due at once and slow writes: a pass starts writes for 2 s, and each renewTime is when it was written.
    const many = Array.from({ length: 400 }, (_, i) => registration(`n${String(i).padStart(3, '0')}`));
    await kubelets.sync(many);
    mock.timers.tick(10_000);
    writes.length = 0;
    callMs = 10;
    await kubelets.sync(many);
    const first = writes.filter((w) => w.method === 'PUT lease');
    assert.ok(first.length < many.length, `a pass stops starting writes after its budget (${first.length} written)`);
    const times = new Set(first.map((w) => w.renewTime));
    assert.ok(times.size > 1, 'each renewal carries the time it was written, not the pass start');
    // The next pass renews the ones left, before any renewed a moment ago comes due again.
    const renewed = new Set(first.map((w) => w.name));
    writes.length = 0;
    await kubelets.sync(many);
    const next = writes.filter((w) => w.method === 'PUT lease').map((w) => w.name);
    assert.deepEqual(
      next.slice(0, many.length - renewed.size).sort(),
      many.map((r) => r.nodeName).filter((n) => !renewed.has(n)),
    );
  } finally {
    mock.timers.reset();
  }
});
