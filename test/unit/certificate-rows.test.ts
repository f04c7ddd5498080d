import assert from 'node:assert/strict';
import { test } from 'node:test';
import { certificateRotation, soonestFirst, type CertificateRow } from '../../src/client/certificate-rows';
import { certificatesTable } from '../../src/cli/render';

const row = (machine: string | undefined, certificate: string, notAfter?: string): CertificateRow => ({
  namespace: 'default',
  cluster: 'c',
  ...(machine ? { machine } : {}),
  certificate,
  ...(notAfter ? { notAfter } : { problem: 'not a certificate' }),
});

test('rows: files that are no certificate first, then the soonest to expire; the table shows the days left', () => {
  const rows = [
    row(undefined, 'ca', '2036-01-01T00:00:00.000Z'),
    row('m-2', 'apiserver', '2027-01-01T00:00:00.000Z'),
    row('m-1', 'kubelet-client', '2026-12-01T00:00:00.000Z'),
    row('m-2', 'etcd-peer'),
  ].sort(soonestFirst);
  assert.deepEqual(
    rows.map((r) => `${r.machine ?? '-'} ${r.certificate}`),
    ['m-2 etcd-peer', 'm-1 kubelet-client', 'm-2 apiserver', '- ca'],
  );
  const lines = certificatesTable(rows, false, Date.parse('2026-11-27T00:00:00.000Z')).split('\n');
  assert.match(lines[1]!, /^default\s+c\s+m-2\s+etcd-peer\s+not a certificate$/);
  assert.match(lines[2]!, /^default\s+c\s+m-1\s+kubelet-client\s+2026-12-01T00:00:00.000Z\s+4d$/);
  assert.match(lines[4]!, /^default\s+c\s+\(cluster\)\s+ca\s+\S+\s+3322d$/);
  assert.match(certificatesTable([row('m', 'x', '2026-11-01T00:00:00.000Z')], false, Date.now()), /\sexpired$/m);
});

test('a rotation groups expiring machines by the owner that replaces them; CAs and ownerless machines are named apart', () => {
  const labels = new Map<string, Record<string, string>>([
    ['cp-1', { 'cluster.x-k8s.io/control-plane-name': 'c-cp' }],
    ['md-1', { 'cluster.x-k8s.io/deployment-name': 'c-md' }],
    ['md-2', { 'cluster.x-k8s.io/deployment-name': 'c-md' }],
    ['lone', {}],
  ]);
  const soon = '2026-12-01T00:00:00.000Z';
  const late = '2030-01-01T00:00:00.000Z';
  const rotation = certificateRotation(
    [
      row('cp-1', 'apiserver', soon),
      row('cp-1', 'etcd-peer', soon),
      row('md-1', 'kubelet-client', soon),
      row('md-2', 'kubelet-client', late),
      row('lone', 'kubelet-client', soon),
      row(undefined, 'capt-admin', soon),
      row(undefined, 'ca', late),
      row('md-2', 'broken'),
    ],
    labels,
    Date.parse('2027-01-01T00:00:00.000Z'),
  );
  assert.deepEqual(
    [...rotation.owners],
    [
      ['kubeadmcontrolplane/c-cp', ['cp-1']],
      ['machinedeployment/c-md', ['md-1']],
    ],
  );
  assert.deepEqual(rotation.standalone, ['lone']);
  assert.deepEqual(
    rotation.authorities.map((r) => r.certificate),
    ['capt-admin'],
  );
});
