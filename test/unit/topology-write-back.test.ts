import assert from 'node:assert/strict';
import { test } from 'node:test';
import { topologyNames } from '../../src/api/topology/topology-names';
import { topologyReplicasPatch } from '../../src/bridge/topology-write-back';
import type { ApiObject } from '../../src/bridge/management-client';
import type { ClusterView } from '../../src/contract/cluster';

const names = topologyNames('default', 'dev');
const cluster = (topology: object): ApiObject => ({
  apiVersion: 'cluster.x-k8s.io/v1beta2',
  kind: 'Cluster',
  metadata: { name: 'dev', namespace: 'default' },
  spec: { topology },
});
const view = (controlPlane: number, workers: Record<string, number>) =>
  ({
    controlPlane: { name: names.controlPlane(), replicas: controlPlane },
    machineDeployments: Object.entries(workers).map(([topologyName, replicas]) => ({
      name: names.machineDeployment(topologyName),
      replicas,
    })),
  }) as unknown as ClusterView;

test("a scale the workflows carry out is written to the Cluster's topology, whole list, other fields kept", () => {
  const topology = {
    version: 'v1.36.3',
    controlPlane: { replicas: 1, metadata: { labels: { a: 'b' } } },
    workers: {
      machineDeployments: [
        { class: 'default-worker', name: 'md-0', replicas: 1 },
        { class: 'default-worker', name: 'md-1', replicas: 2 },
      ],
    },
  };
  assert.equal(topologyReplicasPatch(cluster(topology), view(1, { 'md-0': 1, 'md-1': 2 })), undefined);
  assert.deepEqual(topologyReplicasPatch(cluster(topology), view(3, { 'md-0': 4, 'md-1': 2 })), {
    spec: {
      topology: {
        controlPlane: { replicas: 3, metadata: { labels: { a: 'b' } } },
        workers: {
          machineDeployments: [
            { class: 'default-worker', name: 'md-0', replicas: 4 },
            { class: 'default-worker', name: 'md-1', replicas: 2 },
          ],
        },
      },
    },
  });
  // Replicas the topology leaves unset (an autoscaler's) stay unset.
  const open = { controlPlane: {}, workers: { machineDeployments: [{ class: 'default-worker', name: 'md-0' }] } };
  assert.equal(topologyReplicasPatch(cluster(open), view(3, { 'md-0': 4 })), undefined);
});
