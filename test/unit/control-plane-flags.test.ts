import assert from 'node:assert/strict';
import { test } from 'node:test';
import { wiredFlags } from '../../src/contract/control-plane-flags';
import {
  apiserverProcess,
  controllerManagerProcess,
  schedulerProcess,
  standardPorts,
  withExtraArgs,
  type ControlPlaneLayout,
} from '../../providers/local/control-plane-components';

const layout: ControlPlaneLayout = {
  root: '/machine-root',
  ip: '127.9.8.7',
  ports: standardPorts,
  kubernetesBin: '/bin-dir',
  etcdBinary: '/bin-dir/etcd',
  nodeName: 'cp-0',
  etcdInitialCluster: 'cp-0=https://127.9.8.7:2380',
  etcdClusterState: 'new',
  serviceSubnet: '10.96.0.0/12',
  podSubnet: '192.168.0.0/16',
  serviceDomain: 'cluster.local',
};

const flagName = (flag: string) => flag.slice(2).split('=', 1)[0]!;

test("every flag whose value comes from the machine or the Cluster's networks is one extraArgs may not replace", () => {
  const machineValues = [
    layout.root,
    layout.ip,
    layout.serviceSubnet,
    layout.podSubnet,
    ...Object.values(layout.ports).map(String),
  ];
  for (const spec of [
    apiserverProcess(layout, '/s'),
    controllerManagerProcess(layout, '/s'),
    schedulerProcess(layout, '/s'),
  ]) {
    const tied = spec.args.filter((a) => machineValues.some((v) => a.includes(v))).map(flagName);
    assert.ok(tied.length > 2, `${spec.name} has machine-tied flags`);
    const wired = wiredFlags[spec.name as keyof typeof wiredFlags];
    assert.deepEqual(
      tied.filter((f) => !wired.includes(f)),
      [],
      `${spec.name}'s machine-tied flags are all wired`,
    );
  }
});

test("extraArgs replace kubeadm's flag of the same name in place and add the others after", () => {
  assert.deepEqual(
    withExtraArgs(['--a=1', '--enable-admission-plugins=NodeRestriction', '--b=2'], {
      'enable-admission-plugins': 'NodeRestriction,EventRateLimit',
      v: '4',
    }),
    ['--a=1', '--enable-admission-plugins=NodeRestriction,EventRateLimit', '--b=2', '--v=4'],
  );
  const spec = apiserverProcess(
    { ...layout, extraArgs: { 'kube-apiserver': { 'authorization-mode': 'Node,RBAC,Webhook' } } },
    '/s',
  );
  assert.equal(
    spec.args.filter((a) => a.startsWith('--authorization-mode=')).join(),
    '--authorization-mode=Node,RBAC,Webhook',
  );
  assert.deepEqual(
    schedulerProcess({ ...layout, extraArgs: { 'kube-apiserver': { v: '9' } } }, '/s').args,
    schedulerProcess(layout, '/s').args,
  );
});
