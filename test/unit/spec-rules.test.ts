import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { loadManifests } from '../../src/api/load-manifests';
import type { ClusterModel } from '../../src/api/model';
import type { MachineSpec } from '../../src/contract/machine';
import { clusterChangeProblems, clusterProblems } from '../../src/spec-rules/cluster-rules';
import {
  newerMinor,
  topologyVersionChangeProblems,
  upgradeUnderWayProblems,
  versionChangeProblems,
} from '../../src/spec-rules/kubernetes-version';
import { machineChangeProblems } from '../../src/spec-rules/machine-rules';
import {
  controlPlaneProblems,
  controlPlaneReplicasProblems,
  controlPlaneSubject,
  machineDeploymentProblems,
} from '../../src/spec-rules/owner-rules';
import { formatSpecProblem, type SpecProblem } from '../../src/spec-rules/spec-problem';
import { refuseProblems } from '../../workflows/shared/spec-refusal';

const quickstart = readFileSync(join(__dirname, '../../../examples/quickstart.yaml'), 'utf8');
/** A valid cluster (one control-plane machine at v1.36.3, one MachineDeployment quickstart-md-0), changed by `edit`. */
const cluster = (edit: (m: ClusterModel) => void = () => undefined): ClusterModel => {
  const model = loadManifests([{ file: 'quickstart.yaml', text: quickstart }], {})[0]!;
  edit(model);
  return model;
};
const where = (problems: SpecProblem[]) => problems.map((p) => `${p.kind} ${p.name} ${p.path}: ${p.message}`);

test('a valid cluster breaks no rule', () => {
  assert.deepEqual(clusterProblems(cluster()), []);
  assert.deepEqual(clusterChangeProblems(cluster(), cluster()), []);
});

test("failure domains: a MachineDeployment's and a Machine's must be declared; the declared ones cannot change on a running cluster", () => {
  const declared = (m: ClusterModel, names: string[]) =>
    (m.infrastructure.spec = { failureDomains: names.map((name) => ({ name, controlPlane: name !== 'fd3' })) });
  const placed = cluster((m) => {
    declared(m, ['fd1', 'fd2', 'fd3']);
    m.machineDeployments[0]!.template.failureDomain = 'fd3';
  });
  assert.deepEqual(clusterProblems(placed), []);
  assert.deepEqual(where(clusterProblems(cluster((m) => (m.machineDeployments[0]!.template.failureDomain = 'fd9')))), [
    'MachineDeployment quickstart-md-0 spec.template.spec.failureDomain: failure domain fd9 is not one the LocalCluster declares',
  ]);
  assert.deepEqual(
    where(
      clusterChangeProblems(
        placed,
        cluster((m) => declared(m, ['fd1', 'fd2'])),
      ),
    ),
    [
      'LocalCluster quickstart spec.failureDomains: the failure domains cannot change on a running cluster: its machines were placed by them',
    ],
  );
});

test('control plane: replicas whole, >= 1 and odd; maxSurge 0 or 1, and 0 only with 3 or more; certificatesExpiryDays from 7 to below 365; timeouts >= 0; a machine max age of 30 s or more', () => {
  const cp = cluster().controlPlane;
  const problems = (change: Partial<typeof cp>) => where(controlPlaneProblems('default', { ...cp, ...change }));
  const at = 'KubeadmControlPlane quickstart-control-plane';
  assert.deepEqual(problems({ replicas: 0 }), [`${at} spec.replicas: replicas must be a whole number >= 1, got 0`]);
  assert.deepEqual(problems({ replicas: 1.5 }), [`${at} spec.replicas: replicas must be a whole number >= 1, got 1.5`]);
  assert.deepEqual(problems({ replicas: 4 }), [`${at} spec.replicas: 4 replicas cannot keep etcd quorum`]);
  assert.deepEqual(problems({ maxSurge: 2 }), [
    `${at} spec.rollout.strategy.rollingUpdate.maxSurge: maxSurge 2: KubeadmControlPlane supports maxSurge 0 or 1 only`,
  ]);
  assert.deepEqual(problems({ maxSurge: 0 }), [
    `${at} spec.rollout.strategy.rollingUpdate.maxSurge: maxSurge 0 (delete before create) needs at least 3 replicas, not 1`,
  ]);
  assert.deepEqual(problems({ maxSurge: 0, replicas: 3 }), []);
  assert.deepEqual(problems({ certificatesExpiryDays: 6 }), [
    `${at} spec.rollout.before.certificatesExpiryDays: certificatesExpiryDays 6 must be a whole number of at least 7 days`,
  ]);
  assert.match(
    problems({ certificatesExpiryDays: 365 })[0]!,
    /certificatesExpiryDays 365 is not less than the 365-day validity of machine certificates/,
  );
  assert.deepEqual(problems({ certificatesExpiryDays: 364 }), []);
  assert.deepEqual(problems({ nodeDrainTimeoutSeconds: -1 }), [
    `${at} spec.machineTemplate.spec.deletion.nodeDrainTimeoutSeconds: nodeDrainTimeoutSeconds must be a number of seconds >= 0 (0 means no limit), got -1`,
  ]);
  assert.deepEqual(problems({ machineMaxAgeSeconds: 20 }), [
    `${at} metadata.annotations[capt.cluster.x-k8s.io/machine-max-age]: a machine max age of 20s would replace machines faster than they boot and serve`,
  ]);
  assert.deepEqual(problems({ machineMaxAgeSeconds: 86_400 }), []);
});

test("MachineDeployment: replicas whole and >= 0; maxSurge and maxUnavailable not both the number 0 (as Cluster API's webhook)", () => {
  const md = cluster().machineDeployments[0]!;
  const problems = (change: Partial<typeof md>) => where(machineDeploymentProblems('default', { ...md, ...change }));
  const rolling = (
    maxSurge: number | string,
    maxUnavailable: number | string,
    type: 'RollingUpdate' | 'OnDelete' = 'RollingUpdate',
  ) => ({ strategy: { ...md.strategy, type, maxSurge, maxUnavailable } });
  assert.deepEqual(problems({ replicas: -1 }), [
    'MachineDeployment quickstart-md-0 spec.replicas: replicas must be a whole number >= 0, got -1',
  ]);
  assert.deepEqual(problems({ replicas: 0 }), []);
  assert.deepEqual(problems(rolling(0, 0)), [
    'MachineDeployment quickstart-md-0 spec.rollout.strategy.rollingUpdate: maxSurge and maxUnavailable are both 0, so a rollout could never progress',
  ]);
  assert.deepEqual(problems(rolling('0%', '0%')), [], 'percentages are resolved against replicas, as Cluster API does');
  assert.deepEqual(problems(rolling(0, 0, 'OnDelete')), [], 'OnDelete does not use them');
  assert.deepEqual(problems({ machineMaxAgeSeconds: 30 }), []);
  assert.deepEqual(problems({ machineMaxAgeSeconds: 29 }), [
    'MachineDeployment quickstart-md-0 metadata.annotations[capt.cluster.x-k8s.io/machine-max-age]: a machine max age of 29s would replace machines faster than they boot and serve',
  ]);
  assert.deepEqual(problems({ machineMaxAgeSeconds: 3600, ...rolling(1, 0, 'OnDelete') }), [
    'MachineDeployment quickstart-md-0 metadata.annotations[capt.cluster.x-k8s.io/machine-max-age]: the OnDelete strategy replaces machines only as they are deleted, so no machine would be repaved',
  ]);
});

test('the machine-max-age annotation is a duration: one that is not is refused where it is written', () => {
  const annotated = (value: string) =>
    quickstart.replace(
      /(kind: MachineDeployment\nmetadata:\n)/,
      `$1  annotations:\n    capt.cluster.x-k8s.io/machine-max-age: "${value}"\n`,
    );
  const md = loadManifests([{ file: 'quickstart.yaml', text: annotated('720h') }], {})[0]!.machineDeployments[0]!;
  assert.equal(md.machineMaxAgeSeconds, 720 * 3600);
  assert.throws(
    () => loadManifests([{ file: 'quickstart.yaml', text: annotated('a week') }], {}),
    /metadata\.annotations.*capt\.cluster\.x-k8s\.io\/machine-max-age.*'a week' is not a duration; write it like 90s, 10m or 1h30m: the age after which a machine is replaced, e\.g\. 720h/s,
  );
});

test('cluster: a failure domain the LocalCluster does not declare, and workers newer than the control plane, are refused', () => {
  const problems = clusterProblems(
    cluster((m) => {
      m.machineDeployments[0]!.template.failureDomain = 'fd4';
      m.machineDeployments[0]!.template.version = 'v1.37.0';
    }),
  );
  assert.deepEqual(
    problems.map((p) => [p.path, p.message, p.hint, p.type]),
    [
      [
        'spec.template.spec.failureDomain',
        'failure domain fd4 is not one the LocalCluster declares',
        "declare it in the LocalCluster's spec.failureDomains (a name, and controlPlane: true for control-plane machines), or remove the field",
        'InvalidSpec',
      ],
      [
        'spec.template.spec.version',
        'workers at v1.37.0 would be newer than the control plane at v1.36.3',
        'upgrade the control plane first; kubelets may not be newer than the apiserver',
        'UnsupportedVersion',
      ],
    ],
  );
  assert.deepEqual(
    clusterProblems(
      cluster((m) => {
        m.machineDeployments[0]!.template.version = 'v1.35.4';
      }),
    ),
    [],
    'older workers are fine',
  );
  assert.equal(newerMinor('v2.0.0', 'v1.36.3'), true, 'a major version counts');
  assert.equal(newerMinor('v1.36.9', 'v1.36.3'), false, 'a patch does not');
});

test('a running cluster: provider, control plane and network stay; the version moves one minor at a time from what runs; the new state keeps every rule', () => {
  const current = cluster();
  const paths = (next: ClusterModel, running?: string) =>
    clusterChangeProblems(current, next, running).map((p) => `${p.kind} ${p.path}: ${p.message}`);
  assert.deepEqual(
    paths(
      cluster((m) => {
        m.provider = 'aws';
      }),
    ),
    ['Cluster spec.infrastructureRef.kind: the provider cannot change (local -> aws)'],
  );
  assert.deepEqual(
    paths(
      cluster((m) => {
        m.controlPlane.name = 'other';
      }),
    ),
    ['Cluster spec.controlPlaneRef.name: the control plane cannot be replaced (quickstart-control-plane -> other)'],
  );
  assert.deepEqual(
    paths(
      cluster((m) => {
        m.serviceSubnet = '10.200.0.0/16';
        m.serviceDomain = 'fleet.example';
      }),
    ),
    [
      'Cluster spec.clusterNetwork.services.cidrBlocks: clusterNetwork cannot change on a running cluster (serviceSubnet 10.96.0.0/12 -> 10.200.0.0/16)',
      'Cluster spec.clusterNetwork.serviceDomain: clusterNetwork cannot change on a running cluster (serviceDomain cluster.local -> fleet.example)',
    ],
  );
  assert.deepEqual(
    paths(
      cluster((m) => {
        m.controlPlane.version = 'v1.38.0';
      }),
    ),
    [
      'KubeadmControlPlane spec.version: cannot update Kubernetes version from v1.36.3 to v1.38.0: change one minor version at a time',
    ],
  );
  assert.deepEqual(
    paths(
      cluster((m) => {
        m.controlPlane.version = 'v1.37.0';
      }),
    ),
    [],
  );
  assert.deepEqual(
    paths(
      cluster((m) => {
        m.controlPlane.version = 'v1.37.0';
      }),
      'v1.35.4',
    ),
    [
      'KubeadmControlPlane spec.version: cannot update Kubernetes version from v1.35.4 to v1.37.0: change one minor version at a time',
    ],
    'after an undo, the running version counts',
  );
  assert.deepEqual(
    paths(
      cluster((m) => {
        m.controlPlane.replicas = 2;
      }),
    ),
    ['KubeadmControlPlane spec.replicas: 2 replicas cannot keep etcd quorum'],
    'the rules of a new cluster hold too',
  );
});

test('version policy: no downgrade but by undo (one minor back), no major change, one minor step', () => {
  const subject = controlPlaneSubject('default', 'cp');
  const why = (from: string, to: string, undo = false) =>
    versionChangeProblems(subject, 'spec.version', from, to, { undo }).map((p) => `${p.message}; ${p.hint}`);
  assert.deepEqual(why('v1.36.3', 'v1.36.3'), []);
  assert.deepEqual(why('v1.36.3', 'v1.35.4'), [
    'cannot update Kubernetes version from v1.36.3 to v1.35.4: downgrades are not supported; `capt rollout undo` returns to an earlier revision',
  ]);
  assert.deepEqual(why('v1.36.3', 'v1.35.4', true), []);
  assert.deepEqual(why('v1.36.3', 'v1.34.0', true), [
    'cannot update Kubernetes version from v1.36.3 to v1.34.0: change one minor version at a time; go to v1.35.x first',
  ]);
  assert.deepEqual(why('v1.36.3', 'v2.0.0'), [
    'cannot update Kubernetes version from v1.36.3 to v2.0.0: the major version cannot change; stay on v1.x; a new major version needs a new cluster',
  ]);
});

test("a ClusterClass cluster's version: Cluster API's rule and messages, chained through the class's kubernetesVersions", () => {
  const subject = { kind: 'Cluster', namespace: 'default', name: 'dev' };
  const listed = ['v1.33.1', 'v1.34.4', 'v1.35.4', 'v1.36.3', 'v1.37.2'];
  const why = (from: string, to: string, versions?: string[], workers: string | undefined = from) =>
    topologyVersionChangeProblems(subject, from, to, versions, workers).map(
      (p) => `${p.path}: ${p.message}; ${p.hint}`,
    );
  assert.deepEqual(why('v1.35.4', 'v1.36.3'), [], 'one minor needs no list');
  assert.deepEqual(why('v1.34.4', 'v1.36.3'), [
    'spec.topology.version: version cannot be increased from "1.34.4" to "1.36.3"; go to v1.35.x first, or list every minor up to v1.36.3 in the ClusterClass\'s spec.kubernetesVersions: the cluster then steps through them (a chained upgrade)',
  ]);
  assert.deepEqual(why('v1.34.4', 'v1.36.3', listed), [], 'chained through v1.35.4');
  assert.deepEqual(why('v1.36.3', 'v1.35.4', listed), [
    'spec.topology.version: version cannot be decreased from "1.36.3" to "1.35.4"; keep v1.36.3 or a later version',
  ]);
  assert.deepEqual(why('v1.33.1', 'v1.37.2', listed), [
    "spec.topology.version: the workers (v1.33.1) would have to upgrade on the way, to v1.36.3: capt's chained upgrades upgrade the workers once, at the end; upgrade to v1.36.3 first, then to v1.37.2",
  ]);
  assert.deepEqual(
    topologyVersionChangeProblems(subject, 'v1.33.1', 'v1.37.2', listed, undefined),
    [],
    'no workers: the control plane steps alone',
  );
  assert.deepEqual(why('v1.34.4', 'v1.36.3', ['v1.34.4', 'v1.36.3']), [
    "spec.topology.version: the ClusterClass's spec.kubernetesVersions list no version of minor 35; pick a version the ClusterClass lists in spec.kubernetesVersions",
  ]);
});

test("a chained upgrade's target stays while the control plane has steps left, as Cluster API's webhook refuses", () => {
  const subject = { kind: 'Cluster', namespace: 'default', name: 'dev' };
  assert.deepEqual(
    upgradeUnderWayProblems(subject, 'v1.36.3', 'v1.37.2', ['v1.36.3']).map(
      (p) => `${p.path}: ${p.message}; ${p.hint}`,
    ),
    [
      'spec.topology.version: version cannot be changed: control plane is still completing a previous upgrade (to v1.36.3; steps left v1.36.3); wait until the control plane runs v1.36.3 (capt describe cluster shows the plan), then change it',
    ],
  );
  assert.deepEqual(
    upgradeUnderWayProblems(subject, 'v1.36.3', 'v1.36.3', ['v1.36.3']),
    [],
    'the same target: other changes go',
  );
  assert.deepEqual(
    upgradeUnderWayProblems(subject, 'v1.36.3', 'v1.37.2', []),
    [],
    'no steps left: the next upgrade may start',
  );
});

test('a running Machine changes labels, annotations and timeouts in place, nothing else', () => {
  const spec = {
    namespace: 'default',
    name: 'm-1',
    version: 'v1.36.3',
    failureDomain: undefined,
    labels: {},
    annotations: {},
  } as unknown as MachineSpec;
  assert.deepEqual(machineChangeProblems(spec, { labels: { a: 'b' }, nodeDrainTimeoutSeconds: 0 }), []);
  assert.deepEqual(machineChangeProblems(spec, { version: 'v1.36.3' }), [], 'the same value is no change');
  assert.deepEqual(where(machineChangeProblems(spec, { version: 'v1.37.0', nodeDeletionTimeoutSeconds: -5 })), [
    'Machine m-1 spec.version: version cannot change on an existing Machine',
    'Machine m-1 spec.deletion.nodeDeletionTimeoutSeconds: nodeDeletionTimeoutSeconds must be a number of seconds >= 0 (0 means no limit), got -5',
  ]);
});

test('a workflow validator refuses with every problem, one a line, located and with its fix, typed after the first', () => {
  const even = controlPlaneReplicasProblems(controlPlaneSubject('default', 'cp'), 2, 1);
  assert.equal(
    formatSpecProblem(even[0]!),
    'KubeadmControlPlane default/cp at spec.replicas: 2 replicas cannot keep etcd quorum; stacked etcd needs an odd count: use 1, 3 or 5',
  );
  assert.doesNotThrow(() => refuseProblems([]));
  const refusal = (problems: SpecProblem[]) => {
    try {
      refuseProblems(problems);
    } catch (err) {
      return err as ApplicationFailure;
    }
    throw new Error('not refused');
  };
  const invalid = refusal(even);
  assert.ok(invalid instanceof ApplicationFailure);
  assert.deepEqual(
    [invalid.type, invalid.nonRetryable, invalid.message],
    ['InvalidSpec', true, formatSpecProblem(even[0]!)],
  );
  const skipped = versionChangeProblems(controlPlaneSubject('default', 'cp'), 'spec.version', 'v1.35.4', 'v1.37.0');
  const both = refusal([...skipped, ...even]);
  assert.equal(both.type, 'UnsupportedVersion');
  assert.equal(both.message.split('\n').length, 2);
});
