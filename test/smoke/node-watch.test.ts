import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { V1Node } from '@kubernetes/client-node';
import { KubeClient } from '../../src/kube/kube-client';
import { nodeWatch } from '../../activities/kube/node-watch';
import { startKubeControlPlane, type KubeControlPlane } from '../fixtures/kube-control-plane';
import { processesMentioning } from '../fixtures/leaks';
import { until } from '../fixtures/until';

let kube: KubeControlPlane;
let home: string;

before(async () => {
  home = await mkdtemp(join(tmpdir(), 'capt-home-'));
  process.env.CAPT_HOME = home;
  kube = await startKubeControlPlane();
});

after(async () => {
  await kube?.stop();
  await rm(home, { recursive: true, force: true });
});

const node = (name: string): V1Node => ({ metadata: { name }, spec: { providerID: `test://${name}` } });

test('one Node watch per cluster wakes the waiter of a Node when it changes, and resumes after the apiserver restarts', async () => {
  const client = new KubeClient(kube.kubeconfig);
  const watch = nodeWatch('test/watch', client);
  assert.equal(nodeWatch('test/watch', client), watch, 'every waiter of the cluster shares the one watch');
  const release = watch.hold();
  try {
    // Woken by the change itself: were it the hour-long timeout, the test would time out instead.
    const registered = watch.changeOf('test://a', 3_600_000);
    await client.registerNode(node('a'));
    await registered;
    assert.equal(watch.node('test://a')?.metadata?.name, 'a');
    const ready = watch.changeOf('test://a', 3_600_000);
    await client.patchNodeStatus('a', {
      status: {
        conditions: [
          {
            type: 'Ready',
            status: 'True',
            reason: 'KubeletReady',
            lastHeartbeatTime: new Date().toISOString(),
            lastTransitionTime: new Date().toISOString(),
          },
        ],
      },
    });
    await ready;
    assert.equal(watch.node('test://a')?.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');

    // The apiserver restarts (as its static pod would): the watch breaks, and picks up what changed meanwhile.
    const apiserver = (await processesMentioning([kube.root])).filter(
      (p) => /kube-apiserver /.test(p.cmdline) && !p.cmdline.startsWith('/bin/sh'),
    );
    assert.equal(apiserver.length, 1, 'one kube-apiserver process');
    process.kill(apiserver[0]!.pid, 'SIGKILL');
    await until('the apiserver back to register Node b', () => client.registerNode(node('b')).then(() => true), {
      timeoutMs: 90_000,
    });
    await until('the watch to see Node b after the restart', () => watch.node('test://b'), {
      timeoutMs: 90_000,
      intervalMs: 100,
    });
    await client.deleteNode('a');
    await until('the watch to see Node a deleted', () => !watch.node('test://a'), {
      timeoutMs: 90_000,
      intervalMs: 100,
    });
  } finally {
    release();
  }
});
