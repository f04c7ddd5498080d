import assert from 'node:assert/strict';
import { test } from 'node:test';
import { kubeadmConfigSpecV1beta2, toKubeadmConfigSpec } from '../../src/api/kinds/kubeadm';
import { kubeadmConfigSpecObject } from '../../src/bridge/kubeadm-spec-object';

/** A control plane's kubeadmConfigSpec as an operator writes it in v1beta2, with a field capt accepts without reading. */
const written = {
  verbosity: 4,
  clusterConfiguration: {
    imageRepository: '',
    networking: { serviceSubnet: '10.96.0.0/12', dnsDomain: 'cluster.local' },
    apiServer: {
      certSANs: ['api.example.com'],
      extraArgs: [
        { name: 'profiling', value: 'false' },
        { name: 'audit-log-maxage', value: '7' },
      ],
    },
    scheduler: { extraArgs: [{ name: 'v', value: '2' }] },
  },
  initConfiguration: {
    nodeRegistration: {
      kubeletExtraArgs: [{ name: 'node-labels', value: 'tier=control' }],
      taints: [{ key: 'example.com/cp', effect: 'NoSchedule' }],
    },
  },
  joinConfiguration: { nodeRegistration: { kubeletExtraArgs: [{ name: 'node-labels', value: 'tier=control' }] } },
  files: [{ path: '/etc/motd', content: 'hello', permissions: '0644' }],
  preKubeadmCommands: ['echo before'],
  postKubeadmCommands: ['echo after'],
  format: 'cloud-config' as const,
};
const modelOf = (spec: unknown) => toKubeadmConfigSpec(kubeadmConfigSpecV1beta2.parse(spec));

test("capt's model of a kubeadmConfigSpec goes back into v1beta2's form: the object loads to the same model, and what capt does not read stays", () => {
  const model = modelOf(written);
  assert.deepEqual(kubeadmConfigSpecObject(written, model), written, 'the same spec written back is unchanged');
  // An older revision's model over the object as it is now: every field capt carries is the revision's.
  const older = modelOf({ clusterConfiguration: { apiServer: { extraArgs: [{ name: 'profiling', value: 'true' }] } } });
  const back = kubeadmConfigSpecObject(written, older);
  assert.deepEqual(modelOf(back), older);
  assert.deepEqual(back, {
    verbosity: 4,
    clusterConfiguration: { imageRepository: '', apiServer: { extraArgs: [{ name: 'profiling', value: 'true' }] } },
  });
});
