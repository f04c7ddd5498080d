import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { startKubeControlPlane, type KubeControlPlane } from '../fixtures/kube-control-plane';
import { availableKubernetesVersions, kubectlFor } from '../../src/tools';

const run = promisify(execFile);

for (const version of availableKubernetesVersions()) {
  test(`a real Kubernetes ${version} control plane answers the kubectl built with it and stops without leftovers`, async () => {
    const cp = await startKubeControlPlane({ version });
    const dir = await mkdtemp(join(tmpdir(), 'capt-kubectl-'));
    let pids: number[];
    try {
      await writeFile(join(dir, 'kubeconfig'), cp.kubeconfig, { mode: 0o600 });
      const kubectl = (...args: string[]) =>
        run(kubectlFor(version), ['--kubeconfig', join(dir, 'kubeconfig'), ...args]);
      const { stdout } = await kubectl('version', '-o', 'json');
      assert.equal(
        JSON.parse(stdout).serverVersion.gitVersion,
        version,
        'the apiserver reports the version it was built as',
      );
      assert.equal(JSON.parse(stdout).clientVersion.gitVersion, version, 'so does its kubectl');
      const namespaces = await kubectl('get', 'namespaces', '-o', 'name');
      assert.match(namespaces.stdout, /namespace\/kube-system/);
      pids = await cp.pids();
      assert.equal(pids.length, 4, 'etcd, kube-apiserver, kube-controller-manager and kube-scheduler run');
    } finally {
      await cp.stop();
      await rm(dir, { recursive: true, force: true });
    }
    for (const pid of pids) assert.equal(existsSync(`/proc/${pid}`), false, `process ${pid} is gone after stop`);
    assert.equal(existsSync(cp.root), false, 'the control plane directory is removed');
  });
}

let shared: KubeControlPlane;
before(async () => (shared = await startKubeControlPlane()));
after(async () => shared?.stop());

test('kube-controller-manager is real: it creates the default ServiceAccount of a new namespace', async () => {
  const { KubeConfig, CoreV1Api } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  kc.loadFromString(shared.kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: 'controller-check' } } });
  const deadline = Date.now() + 60_000;
  let names: string[] = [];
  while (Date.now() < deadline) {
    names = (await core.listNamespacedServiceAccount({ namespace: 'controller-check' })).items.map(
      (sa) => sa.metadata!.name!,
    );
    if (names.includes('default')) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  assert.deepEqual(names, ['default']);
});
