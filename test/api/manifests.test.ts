import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseAllDocuments, stringify } from 'yaml';
import { loadManifests } from '../../src/api/load-manifests';
import { ManifestError } from '../../src/api/manifest-error';
import { manifestVariables, substituteVariables } from '../../src/api/variables';
import { availableKubernetesVersions, clusterApiE2eData } from '../../src/tools';

const root = join(__dirname, '../../..');
const quickstart = readFileSync(join(root, 'examples/quickstart.yaml'), 'utf8');
const v1beta1 = readFileSync(join(root, 'test/api/manifests/quickstart-v1beta1.yaml'), 'utf8');

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Doc = any;
const docsOf = (text: string): Doc[] => parseAllDocuments(substituteVariables(text, {}).text).map((d) => d.toJS());
const baseDocs = (): Doc[] => docsOf(quickstart);
const render = (docs: Doc[]) => docs.map((d) => stringify(d)).join('---\n');
const byKind = (docs: Doc[], kind: string, index = 0) => docs.filter((d) => d.kind === kind)[index];

test('the v1beta1 and v1beta2 forms of one cluster yield equal models', () => {
  const a = loadManifests([{ file: 'quickstart.yaml', text: quickstart }], {});
  const b = loadManifests([{ file: 'quickstart-v1beta1.yaml', text: v1beta1 }], {});
  assert.equal(a.length, 1);
  assert.deepEqual(a, b);
  assert.equal(a[0]!.controlPlane.replicas, 1);
  assert.equal(a[0]!.machineDeployments[0]!.replicas, 2);
  assert.equal(a[0]!.machineDeployments[0]!.template.nodeDrainTimeoutSeconds, 300);
  assert.deepEqual(
    a[0]!.machineDeployments[0]!.template.bootstrap.config.joinConfiguration?.nodeRegistration?.kubeletExtraArgs,
    { 'node-labels': 'capt.example/pool=md-0' },
  );
});

test("clusterNetwork reaches the model: services, pods and serviceDomain as given, kubeadm's defaults otherwise", () => {
  const docs = baseDocs();
  byKind(docs, 'Cluster').spec.clusterNetwork = {
    services: { cidrBlocks: ['10.100.0.0/16'] },
    pods: { cidrBlocks: ['10.128.0.0/14'] },
    serviceDomain: 'fleet.example',
  };
  const [custom] = loadManifests([{ file: 'cluster.yaml', text: render(docs) }], {});
  assert.deepEqual(
    [custom!.serviceSubnet, custom!.podSubnet, custom!.serviceDomain],
    ['10.100.0.0/16', '10.128.0.0/14', 'fleet.example'],
  );
  delete byKind(docs, 'Cluster').spec.clusterNetwork;
  const [plain] = loadManifests([{ file: 'cluster.yaml', text: render(docs) }], {});
  assert.deepEqual(
    [plain!.serviceSubnet, plain!.podSubnet, plain!.serviceDomain],
    ['10.96.0.0/12', '10.244.0.0/16', 'cluster.local'],
  );
});

test('variables: ${VAR}, ${VAR:=default}, ${VAR:-default}; --var wins over the environment; unset without default is an error naming it', () => {
  assert.deepEqual(substituteVariables('a=${A} b=${B:=two} c=${C:-three}', { A: 'one' }), {
    text: 'a=one b=two c=three',
    missing: [],
  });
  assert.deepEqual(
    substituteVariables('${B:=two} ${C:-three}', { B: '', C: '' }),
    { text: 'two three', missing: [] },
    'empty falls back too',
  );
  assert.deepEqual(substituteVariables('${X}-${Y}-${X}', {}), { text: '--', missing: ['X', 'Y'] });
  assert.deepEqual(manifestVariables({ A: 'env', B: 'env' }, ['A=flag', 'C=x=y']), { A: 'flag', B: 'env', C: 'x=y' });
  assert.throws(() => manifestVariables({}, ['NOVALUE']), /--var NOVALUE: expected NAME=value/);
  const models = loadManifests([{ file: 'q.yaml', text: quickstart }], {
    CLUSTER_NAME: 'prod',
    WORKER_MACHINE_COUNT: '5',
  });
  assert.equal(models[0]!.name, 'prod');
  assert.equal(models[0]!.machineDeployments[0]!.name, 'prod-md-0');
  assert.equal(models[0]!.machineDeployments[0]!.replicas, 5);
  assert.throws(
    () => loadManifests([{ file: 'x.yaml', text: 'apiVersion: v1\nkind: ${KIND_OF_THING}\n' }], {}),
    (err: ManifestError) => {
      assert.match(err.message, /x\.yaml \(document 1\): variable \$\{KIND_OF_THING\} is not set and has no default/);
      assert.match(err.message, /--var KIND_OF_THING=value/);
      return true;
    },
  );
});

test("a KubeadmConfigTemplate with no spec is accepted, as Cluster API accepts it: its workers join with kubeadm's defaults", () => {
  const docs = baseDocs();
  delete byKind(docs, 'KubeadmConfigTemplate').spec;
  const [model] = loadManifests([{ file: 'cluster.yaml', text: render(docs) }], {});
  assert.deepEqual(model!.machineDeployments[0]!.template.bootstrap.config, {});
});

test('maxSurge and maxUnavailable that round to 0 and 0 are accepted, as Cluster API accepts them (the rollout then takes maxUnavailable 1)', () => {
  const docs = baseDocs();
  byKind(docs, 'MachineDeployment').spec.rollout.strategy.rollingUpdate = { maxSurge: '0%', maxUnavailable: '10%' };
  const [model] = loadManifests([{ file: 'cluster.yaml', text: render(docs) }], {});
  assert.deepEqual(model!.machineDeployments[0]!.strategy, {
    type: 'RollingUpdate',
    maxSurge: '0%',
    maxUnavailable: '10%',
    deletionOrder: 'Random',
  });
});

interface Case {
  name: string;
  /** Written in v1beta1 (the quickstart's v1beta1 form): the problem names the v1beta1 field. */
  v1beta1?: boolean;
  mutate: (docs: Doc[]) => Doc[] | void;
  path?: string;
  message: RegExp;
}

/** A standalone worker Machine of the quickstart cluster with its KubeadmConfig and LocalMachine; `patch` merges into the Machine. */
function lone(d: Doc[], patch: { metadata?: Record<string, unknown>; spec?: Record<string, unknown> } = {}): Doc[] {
  const spec = {
    clusterName: 'quickstart',
    version: byKind(d, 'KubeadmControlPlane').spec.version,
    bootstrap: { configRef: { apiGroup: 'bootstrap.cluster.x-k8s.io', kind: 'KubeadmConfig', name: 'lone' } },
    infrastructureRef: { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: 'LocalMachine', name: 'lone' },
  };
  return [
    {
      apiVersion: 'cluster.x-k8s.io/v1beta2',
      kind: 'Machine',
      metadata: { name: 'lone', ...patch.metadata },
      spec: { ...spec, ...patch.spec, bootstrap: { ...spec.bootstrap, ...(patch.spec?.bootstrap as object) } },
    },
    { apiVersion: 'bootstrap.cluster.x-k8s.io/v1beta2', kind: 'KubeadmConfig', metadata: { name: 'lone' } },
    {
      apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta2',
      kind: 'LocalMachine',
      metadata: { name: 'lone' },
      spec: { bootDelaySeconds: 2 },
    },
  ];
}

/** A v1beta2 MachineHealthCheck of the quickstart cluster selecting `labels`. */
const mhc = (labels: Record<string, string>, spec: Record<string, unknown> = {}) => ({
  apiVersion: 'cluster.x-k8s.io/v1beta2',
  kind: 'MachineHealthCheck',
  metadata: { name: 'quickstart-mhc' },
  spec: { clusterName: 'quickstart', selector: { matchLabels: labels }, ...spec },
});

const cases: Case[] = [
  {
    name: 'unknown field in Cluster spec',
    mutate: (d) => {
      byKind(d, 'Cluster').spec.controlPlaneRefs = {};
    },
    path: 'spec.controlPlaneRefs',
    message: /unknown field 'controlPlaneRefs'/,
  },
  {
    name: 'unknown top-level field',
    mutate: (d) => {
      byKind(d, 'MachineDeployment').specs = {};
    },
    path: 'specs',
    message: /unknown field 'specs'/,
  },
  {
    name: 'replicas as a string',
    mutate: (d) => {
      byKind(d, 'MachineDeployment').spec.replicas = 'three';
    },
    path: 'spec.replicas',
    message: /expected number/,
  },
  {
    name: 'negative MachineDeployment replicas',
    mutate: (d) => {
      byKind(d, 'MachineDeployment').spec.replicas = -1;
    },
    path: 'spec.replicas',
    message: /replicas must be a whole number >= 0, got -1/,
  },
  {
    name: 'even KCP replicas',
    mutate: (d) => {
      byKind(d, 'KubeadmControlPlane').spec.replicas = 2;
    },
    path: 'spec.replicas',
    message: /2 replicas cannot keep etcd quorum/,
  },
  {
    name: 'KCP replicas 0',
    mutate: (d) => {
      byKind(d, 'KubeadmControlPlane').spec.replicas = 0;
    },
    path: 'spec.replicas',
    message: /replicas must be a whole number >= 1, got 0/,
  },
  {
    name: 'maxSurge and maxUnavailable both 0',
    mutate: (d) => {
      byKind(d, 'MachineDeployment').spec.rollout.strategy.rollingUpdate = { maxSurge: 0, maxUnavailable: 0 };
    },
    path: 'spec.rollout.strategy.rollingUpdate',
    message: /both 0/,
  },
  {
    name: 'v1beta1 maxSurge and maxUnavailable both 0',
    v1beta1: true,
    mutate: (d) => {
      byKind(d, 'MachineDeployment').spec.strategy.rollingUpdate = { maxSurge: 0, maxUnavailable: 0 };
    },
    path: 'spec.strategy.rollingUpdate',
    message: /both 0/,
  },
  {
    name: 'malformed KCP version',
    mutate: (d) => {
      byKind(d, 'KubeadmControlPlane').spec.version = '1.36';
    },
    path: 'spec.version',
    message: /must be a Kubernetes version like v1\.36\.3/,
  },
  {
    name: 'malformed worker version',
    mutate: (d) => {
      byKind(d, 'MachineDeployment').spec.template.spec.version = 'latest';
    },
    path: 'spec.template.spec.version',
    message: /must be a Kubernetes version/,
  },
  {
    name: 'workers newer than the control plane',
    mutate: (d) => {
      byKind(d, 'KubeadmControlPlane').spec.version = 'v1.35.4';
    },
    path: 'spec.template.spec.version',
    message: /newer than the control plane at v1\.35\.4/,
  },
  {
    name: 'dangling controlPlaneRef',
    mutate: (d) => {
      byKind(d, 'Cluster').spec.controlPlaneRef.name = 'nope';
    },
    path: 'spec.controlPlaneRef.name',
    message: /KubeadmControlPlane default\/nope is not in the manifests/,
  },
  {
    name: 'dangling infrastructureRef',
    mutate: (d) => {
      byKind(d, 'Cluster').spec.infrastructureRef.name = 'gone';
    },
    path: 'spec.infrastructureRef.name',
    message: /LocalCluster default\/gone is not in the manifests/,
  },
  {
    name: 'dangling bootstrap configRef',
    mutate: (d) => {
      byKind(d, 'MachineDeployment').spec.template.spec.bootstrap.configRef.name = 'missing';
    },
    path: 'spec.template.spec.bootstrap.configRef.name',
    message: /KubeadmConfigTemplate default\/missing is not in the manifests/,
  },
  {
    name: 'dangling machine template',
    mutate: (d) => {
      byKind(d, 'KubeadmControlPlane').spec.machineTemplate.spec.infrastructureRef.name = 'x';
    },
    path: 'spec.machineTemplate.spec.infrastructureRef.name',
    message: /LocalMachineTemplate default\/x is not in the manifests/,
  },
  {
    name: 'v1beta1 dangling machine template',
    v1beta1: true,
    mutate: (d) => {
      byKind(d, 'KubeadmControlPlane').spec.machineTemplate.infrastructureRef.name = 'x';
    },
    path: 'spec.machineTemplate.infrastructureRef.name',
    message: /LocalMachineTemplate default\/x is not in the manifests/,
  },
  {
    name: 'MachineDeployment of an unknown cluster',
    mutate: (d) => {
      byKind(d, 'MachineDeployment').spec.clusterName = 'elsewhere';
      byKind(d, 'MachineDeployment').spec.template.spec.clusterName = 'elsewhere';
    },
    path: 'spec.clusterName',
    message: /Cluster default\/elsewhere is not in the manifests/,
  },
  {
    name: 'unsupported provider kind',
    mutate: (d) => {
      byKind(d, 'LocalMachineTemplate', 1).kind = 'DockerMachineTemplate';
    },
    path: 'kind',
    message: /kind DockerMachineTemplate is not served by any installed provider/,
  },
  {
    name: 'wrong kind in a reference',
    mutate: (d) => {
      byKind(d, 'Cluster').spec.infrastructureRef.kind = 'AWSCluster';
    },
    path: 'spec.infrastructureRef.kind',
    message: /AWSCluster cannot be used here/,
  },
  {
    name: 'unknown core kind',
    mutate: (d) => [...d, { apiVersion: 'cluster.x-k8s.io/v1beta2', kind: 'MachinePool', metadata: { name: 'mp' } }],
    path: 'kind',
    message: /MachinePool .* is not a kind capt manages/,
  },
  {
    name: 'unsupported API version',
    mutate: (d) => {
      byKind(d, 'Cluster').apiVersion = 'cluster.x-k8s.io/v1alpha4';
    },
    path: 'apiVersion',
    message: /cluster\.x-k8s\.io\/v1alpha4 is not supported/,
  },
  {
    name: 'kind in the wrong group',
    mutate: (d) => {
      byKind(d, 'KubeadmControlPlane').apiVersion = 'cluster.x-k8s.io/v1beta2';
    },
    path: 'apiVersion',
    message: /KubeadmControlPlane belongs to controlplane\.cluster\.x-k8s\.io/,
  },
  {
    name: 'missing kind',
    mutate: (d) => {
      delete byKind(d, 'LocalCluster').kind;
    },
    path: 'kind',
    message: /kind is missing/,
  },
  {
    name: 'uppercase name',
    mutate: (d) => {
      byKind(d, 'LocalCluster').metadata.name = 'Quick_Start';
      byKind(d, 'Cluster').spec.infrastructureRef.name = 'Quick_Start';
    },
    path: 'metadata.name',
    message: /lowercase DNS name/,
  },
  {
    name: 'bad duration (v1beta1 style in v1beta2)',
    mutate: (d) => {
      byKind(d, 'MachineDeployment').spec.template.spec.deletion.nodeDrainTimeoutSeconds = '5m';
    },
    path: 'spec.template.spec.deletion.nodeDrainTimeoutSeconds',
    message: /expected number/,
  },
  {
    name: 'unknown strategy type',
    mutate: (d) => {
      byKind(d, 'MachineDeployment').spec.rollout.strategy.type = 'BlueGreen';
    },
    path: 'spec.rollout.strategy.type',
    message: /RollingUpdate|OnDelete/,
  },
  {
    name: 'KCP maxSurge 2',
    mutate: (d) => {
      byKind(d, 'KubeadmControlPlane').spec.rollout = { strategy: { rollingUpdate: { maxSurge: 2 } } };
    },
    path: 'spec.rollout.strategy.rollingUpdate.maxSurge',
    message: /maxSurge 2: KubeadmControlPlane supports maxSurge 0 or 1 only/,
  },
  {
    name: 'KCP maxSurge as a percentage',
    mutate: (d) => {
      byKind(d, 'KubeadmControlPlane').spec.rollout = { strategy: { rollingUpdate: { maxSurge: '50%' } } };
    },
    path: 'spec.rollout.strategy.rollingUpdate.maxSurge',
    message: /maxSurge 50%: KubeadmControlPlane supports maxSurge 0 or 1 only/,
  },
  {
    name: 'KCP maxSurge 0 with 1 replica',
    mutate: (d) => {
      byKind(d, 'KubeadmControlPlane').spec.rollout = { strategy: { rollingUpdate: { maxSurge: 0 } } };
    },
    path: 'spec.rollout.strategy.rollingUpdate.maxSurge',
    message: /needs at least 3 replicas, not 1/,
  },
  {
    name: 'v1beta1 KCP maxSurge 0 with 1 replica',
    v1beta1: true,
    mutate: (d) => {
      byKind(d, 'KubeadmControlPlane').spec.rolloutStrategy = { rollingUpdate: { maxSurge: 0 } };
    },
    path: 'spec.rolloutStrategy.rollingUpdate.maxSurge',
    message: /needs at least 3 replicas, not 1/,
  },
  {
    name: 'KCP certificatesExpiryDays not below the certificate validity',
    mutate: (d) => {
      byKind(d, 'KubeadmControlPlane').spec.rollout = { before: { certificatesExpiryDays: 400 } };
    },
    path: 'spec.rollout.before.certificatesExpiryDays',
    message: /certificatesExpiryDays 400 is not less than the 365-day validity/,
  },
  {
    name: 'KCP certificatesExpiryDays below a week',
    mutate: (d) => {
      byKind(d, 'KubeadmControlPlane').spec.rollout = { before: { certificatesExpiryDays: 5 } };
    },
    path: 'spec.rollout.before.certificatesExpiryDays',
    message: /certificatesExpiryDays 5 must be a whole number of at least 7 days/,
  },
  {
    name: 'v1beta1 KCP certificatesExpiryDays',
    v1beta1: true,
    mutate: (d) => {
      byKind(d, 'KubeadmControlPlane').spec.rolloutBefore = { certificatesExpiryDays: 365 };
    },
    path: 'spec.rolloutBefore.certificatesExpiryDays',
    message: /certificatesExpiryDays 365 is not less than the 365-day validity/,
  },
  {
    name: 'bad CIDR',
    mutate: (d) => {
      byKind(d, 'Cluster').spec.clusterNetwork.pods.cidrBlocks = ['10.244.0.0'];
    },
    path: 'spec.clusterNetwork.pods.cidrBlocks[0]',
    message: /must be an IPv4 CIDR/,
  },
  {
    name: 'dual-stack services',
    mutate: (d) => {
      byKind(d, 'Cluster').spec.clusterNetwork.services = { cidrBlocks: ['10.96.0.0/12', '10.97.0.0/16'] };
    },
    path: 'spec.clusterNetwork.services.cidrBlocks',
    message: /single-stack IPv4 clusters: give one CIDR block/,
  },
  {
    name: 'apiServerPort other than 6443',
    mutate: (d) => {
      byKind(d, 'Cluster').spec.clusterNetwork.apiServerPort = 8443;
    },
    path: 'spec.clusterNetwork.apiServerPort',
    message: /serve the apiserver on port 6443/,
  },
  {
    name: 'relative file path',
    mutate: (d) => {
      byKind(d, 'KubeadmConfigTemplate').spec.template.spec.files = [{ path: 'etc/motd', content: 'hi' }];
    },
    path: 'spec.template.spec.files[0].path',
    message: /must be an absolute path/,
  },
  {
    name: 'v1beta1 kubeletExtraArgs map in v1beta2',
    mutate: (d) => {
      byKind(d, 'KubeadmConfigTemplate').spec.template.spec.joinConfiguration.nodeRegistration.kubeletExtraArgs = {
        'node-labels': 'a=b',
      };
    },
    path: 'spec.template.spec.joinConfiguration.nodeRegistration.kubeletExtraArgs',
    message: /expected array/,
  },
  {
    name: 'bad taint effect',
    mutate: (d) => {
      byKind(d, 'KubeadmConfigTemplate').spec.template.spec.joinConfiguration.nodeRegistration.taints = [
        { key: 'a', effect: 'Never' },
      ];
    },
    path: 'spec.template.spec.joinConfiguration.nodeRegistration.taints[0].effect',
    message: /NoSchedule/,
  },
  {
    name: 'unknown LocalMachineTemplate knob',
    mutate: (d) => {
      byKind(d, 'LocalMachineTemplate', 1).spec.template.spec.cpus = 4;
    },
    path: 'spec.template.spec.cpus',
    message: /unknown field 'cpus'/,
  },
  {
    name: 'duplicate object',
    mutate: (d) => [...d, byKind(d, 'LocalCluster')],
    message: /LocalCluster default\/quickstart appears twice/,
  },
  {
    name: 'a failure domain the LocalCluster does not declare',
    mutate: (d) => {
      byKind(d, 'MachineDeployment').spec.template.spec.failureDomain = 'fd4';
    },
    path: 'spec.template.spec.failureDomain',
    message: /failure domain fd4 is not one the LocalCluster declares/,
  },
  {
    name: 'a failure domain declared twice',
    mutate: (d) => {
      byKind(d, 'LocalCluster').spec = { failureDomains: [{ name: 'fd1' }, { name: 'fd1', controlPlane: true }] };
    },
    path: 'spec.failureDomains[1].name',
    message: /failure domain fd1 is declared twice/,
  },
  {
    name: "a failure domain's attributes, which the local provider has no use for",
    mutate: (d) => {
      byKind(d, 'LocalCluster').spec = { failureDomains: [{ name: 'fd1', attributes: { zone: 'a' } }] };
    },
    path: 'spec.failureDomains[0].attributes',
    message: /unknown field 'attributes'/,
  },
  {
    name: 'a MachineHealthCheck spanning the control plane and a MachineDeployment',
    path: 'spec.selector.matchLabels',
    message:
      /selects the machines of KubeadmControlPlane quickstart-control-plane and MachineDeployment quickstart-md-0; capt counts maxUnhealthy per owner/,
    mutate: (d) => [...d, mhc({ 'cluster.x-k8s.io/cluster-name': 'quickstart' })],
  },
  {
    name: 'a MachineHealthCheck on a healthy Node state',
    path: 'spec.checks.unhealthyNodeConditions[0].status',
    message: /Ready=True is the healthy state of that condition/,
    mutate: (d) => [
      ...d,
      mhc(
        { 'cluster.x-k8s.io/deployment-name': 'quickstart-md-0' },
        { checks: { unhealthyNodeConditions: [{ type: 'Ready', status: 'True', timeoutSeconds: 60 }] } },
      ),
    ],
  },
  {
    name: "a check of a machine condition outside Cluster API's states",
    path: 'spec.checks.unhealthyMachineConditions[0].status',
    message: /expected one of "True"\|"False"\|"Unknown"/,
    mutate: (d) => [
      ...d,
      mhc(
        { 'cluster.x-k8s.io/deployment-name': 'quickstart-md-0' },
        { checks: { unhealthyMachineConditions: [{ type: 'NodeReady', status: 'Down', timeoutSeconds: 60 }] } },
      ),
    ],
  },
  {
    name: 'a check of a machine condition capt sets but keeps no transitions of',
    path: 'spec.checks.unhealthyMachineConditions[1].type',
    message: /capt sets InfrastructureReady on a Machine, but the owner that judges its machines keeps no transitions/,
    mutate: (d) => [
      ...d,
      mhc(
        { 'cluster.x-k8s.io/deployment-name': 'quickstart-md-0' },
        {
          checks: {
            unhealthyMachineConditions: [
              { type: 'NodeReady', status: 'Unknown', timeoutSeconds: 300 },
              { type: 'InfrastructureReady', status: 'False', timeoutSeconds: 1800 },
            ],
          },
        },
      ),
    ],
  },
  {
    name: "a check of a machine's Ready (Cluster API refuses it too)",
    path: 'spec.checks.unhealthyMachineConditions[0].type',
    message: /Cluster API refuses a check on a Machine's Ready/,
    mutate: (d) => [
      ...d,
      mhc(
        { 'cluster.x-k8s.io/deployment-name': 'quickstart-md-0' },
        { checks: { unhealthyMachineConditions: [{ type: 'Ready', status: 'False', timeoutSeconds: 60 }] } },
      ),
    ],
  },
  {
    name: "a check of a machine's NodeReady in its healthy state",
    path: 'spec.checks.unhealthyMachineConditions[0].status',
    message: /NodeReady=True is the healthy state of that condition, so every healthy machine would be remediated/,
    mutate: (d) => [
      ...d,
      mhc(
        { 'cluster.x-k8s.io/deployment-name': 'quickstart-md-0' },
        { checks: { unhealthyMachineConditions: [{ type: 'NodeReady', status: 'True', timeoutSeconds: 60 }] } },
      ),
    ],
  },
  {
    name: 'v1beta1 MachineHealthCheck with a remediation template',
    v1beta1: true,
    path: 'spec.remediationTemplate',
    message: /external remediation \(a remediation template\) is not carried out by capt/,
    mutate: (d) => [
      ...d,
      {
        apiVersion: 'cluster.x-k8s.io/v1beta1',
        kind: 'MachineHealthCheck',
        metadata: { name: 'ext' },
        spec: {
          clusterName: 'quickstart',
          selector: { matchLabels: { 'cluster.x-k8s.io/deployment-name': 'quickstart-md-0' } },
          remediationTemplate: { kind: 'X', name: 'y', apiVersion: 'z/v1' },
        },
      },
    ],
  },
  {
    name: 'two MachineHealthChecks on one MachineDeployment',
    path: 'spec.selector.matchLabels',
    message: /already checked by MachineHealthCheck quickstart-mhc/,
    mutate: (d) => [
      ...d,
      mhc({ 'cluster.x-k8s.io/deployment-name': 'quickstart-md-0' }),
      { ...mhc({ 'cluster.x-k8s.io/deployment-name': 'quickstart-md-0' }), metadata: { name: 'second' } },
    ],
  },
  {
    name: 'a control-plane Machine of its own',
    path: 'metadata.labels',
    message: /a control-plane Machine of its own is not carried out by capt/,
    mutate: (d) => [...d, ...lone(d, { metadata: { name: 'lone', labels: { 'cluster.x-k8s.io/control-plane': '' } } })],
  },
  {
    name: 'a Machine with bootstrap data made elsewhere',
    path: 'spec.bootstrap.dataSecretName',
    message: /bootstrap data made elsewhere is not used by capt/,
    mutate: (d) => [...d, ...lone(d, { spec: { bootstrap: { dataSecretName: 'data' } } })],
  },
  {
    name: 'a Machine adopting an existing machine',
    path: 'spec.providerID',
    message: /adopting an existing machine by providerID is not carried out/,
    mutate: (d) => [...d, ...lone(d, { spec: { providerID: 'local://x' } })],
  },
  {
    name: 'a Machine on a machine template',
    path: 'spec.infrastructureRef.kind',
    message: /LocalMachineTemplate cannot be used here/,
    mutate: (d) => [
      ...d,
      ...lone(d, {
        spec: {
          infrastructureRef: {
            apiGroup: 'infrastructure.cluster.x-k8s.io',
            kind: 'LocalMachineTemplate',
            name: 'quickstart-md-0',
          },
        },
      }),
    ],
  },
  {
    name: "a MachineDeployment selector its template's labels do not satisfy",
    path: 'spec.selector.matchLabels.tier',
    message: /selects tier=web, which its machines would not carry: add it to spec\.template\.metadata\.labels/,
    mutate: (d) => {
      byKind(d, 'MachineDeployment').spec.selector = { matchLabels: { tier: 'web' } };
    },
  },
  {
    name: 'a MachineDeployment selector with matchExpressions (capt matches labels only)',
    path: 'spec.selector.matchExpressions',
    message: /unknown field 'matchExpressions'/,
    mutate: (d) => {
      byKind(d, 'MachineDeployment').spec.selector = { matchExpressions: [{ key: 'a', operator: 'Exists' }] };
    },
  },
  {
    name: 'an apiServer flag capt wires the machine with',
    path: 'spec.kubeadmConfigSpec.clusterConfiguration.apiServer.extraArgs[1]',
    message: /--secure-port of kube-apiserver is set by capt from the machine/,
    mutate: (d) => {
      byKind(d, 'KubeadmControlPlane').spec.kubeadmConfigSpec.clusterConfiguration = {
        apiServer: {
          extraArgs: [
            { name: 'v', value: '2' },
            { name: 'secure-port', value: '7443' },
          ],
        },
      };
    },
  },
  {
    name: 'a controllerManager flag capt wires, in v1beta1 map form',
    v1beta1: true,
    path: 'spec.kubeadmConfigSpec.clusterConfiguration.controllerManager.extraArgs.kubeconfig',
    message: /--kubeconfig of kube-controller-manager is set by capt/,
    mutate: (d) => {
      byKind(d, 'KubeadmControlPlane').spec.kubeadmConfigSpec.clusterConfiguration = {
        controllerManager: { extraArgs: { kubeconfig: '/tmp/other.conf' } },
      };
    },
  },
  {
    name: 'a flag given twice',
    path: 'spec.kubeadmConfigSpec.clusterConfiguration.scheduler.extraArgs[1].name',
    message: /flag 'v' is given twice; capt passes each flag once/,
    mutate: (d) => {
      byKind(d, 'KubeadmControlPlane').spec.kubeadmConfigSpec.clusterConfiguration = {
        scheduler: {
          extraArgs: [
            { name: 'v', value: '2' },
            { name: 'v', value: '4' },
          ],
        },
      };
    },
  },
  {
    name: "a flag's name with its dashes",
    path: 'spec.kubeadmConfigSpec.clusterConfiguration.apiServer.extraArgs[0].name',
    message: /a flag's name without its leading dashes/,
    mutate: (d) => {
      byKind(d, 'KubeadmControlPlane').spec.kubeadmConfigSpec.clusterConfiguration = {
        apiServer: { extraArgs: [{ name: '--v', value: '2' }] },
      };
    },
  },
  {
    name: "a volume mounted over the machine's capt tools",
    path: 'spec.kubeadmConfigSpec.clusterConfiguration.apiServer.extraVolumes[0].mountPath',
    message: /may not be mounted on \/run\/capt/,
    mutate: (d) => {
      byKind(d, 'KubeadmControlPlane').spec.kubeadmConfigSpec.clusterConfiguration = {
        apiServer: { extraVolumes: [{ name: 'tools', hostPath: '/var/tools', mountPath: '/run/capt/tools' }] },
      };
    },
  },
  {
    name: 'a volume of a socket',
    path: 'spec.kubeadmConfigSpec.clusterConfiguration.apiServer.extraVolumes[0].pathType',
    message: /a local machine has no devices or sockets of its own to mount/,
    mutate: (d) => {
      byKind(d, 'KubeadmControlPlane').spec.kubeadmConfigSpec.clusterConfiguration = {
        apiServer: {
          extraVolumes: [{ name: 'sock', hostPath: '/run/x.sock', mountPath: '/run/x.sock', pathType: 'Socket' }],
        },
      };
    },
  },
  {
    name: "a worker's KubeadmConfigTemplate with apiServer flags",
    path: 'spec.template.spec.clusterConfiguration.apiServer',
    message: /a worker runs no kube-apiserver: its extraArgs and extraVolumes would do nothing/,
    mutate: (d) => {
      byKind(d, 'KubeadmConfigTemplate').spec.template.spec.clusterConfiguration = {
        apiServer: { extraArgs: [{ name: 'v', value: '2' }] },
      };
    },
  },
  {
    name: 'an image repository (a local machine runs binaries)',
    path: 'spec.kubeadmConfigSpec.clusterConfiguration.imageRepository',
    message: /runs the Kubernetes version's binaries, not images/,
    mutate: (d) => {
      byKind(d, 'KubeadmControlPlane').spec.kubeadmConfigSpec.clusterConfiguration = {
        imageRepository: 'registry.example.com',
      };
    },
  },
  {
    name: 'a CoreDNS image tag',
    path: 'spec.kubeadmConfigSpec.clusterConfiguration.dns',
    message: /a local cluster runs no CoreDNS/,
    mutate: (d) => {
      byKind(d, 'KubeadmControlPlane').spec.kubeadmConfigSpec.clusterConfiguration = { dns: { imageTag: 'v1.12.0' } };
    },
  },
  { name: 'not YAML', mutate: () => [], message: /not valid YAML/ },
];

for (const c of cases) {
  test(`invalid manifest: ${c.name}`, () => {
    const docs = c.v1beta1 ? docsOf(v1beta1) : baseDocs();
    const changed = c.mutate(docs) ?? docs;
    const text = c.name === 'not YAML' ? 'apiVersion: [unclosed\n' : render(changed);
    assert.throws(
      () => loadManifests([{ file: 'cluster.yaml', text }], {}),
      (err: unknown) => {
        assert.ok(err instanceof ManifestError, `a ManifestError, got ${err}`);
        const hit = err.problems.find((p) => c.message.test(p.message) && (c.path === undefined || p.path === c.path));
        assert.ok(hit, `expected a problem at ${c.path} matching ${c.message}; got:\n${err.message}`);
        assert.equal(hit.file, 'cluster.yaml');
        assert.ok(Number.isInteger(hit.index));
        assert.match(err.message, /cluster\.yaml \(document \d+\)/);
        return true;
      },
    );
  });
}

// Cluster API's own e2e manifests (test/api/manifests/capi-*.yaml, origins in their first lines), with the
// local provider's infrastructure kinds: what Cluster API accepts, capt accepts or refuses naming the field.
const upstream = (
  release: 'v1.14' | 'v1.10',
  part: 'cluster-with-kcp' | 'md' | 'mhc',
  edit: (text: string) => string = (t) => t,
) => {
  const file = `capi-${release}-${part}.yaml`;
  return { file, text: edit(readFileSync(join(root, 'test/api/manifests', file), 'utf8')) };
};
const withoutFailureDomain = (text: string) => text.replace('      failureDomain: fd4\n', '');
const problemsOf = (run: () => unknown) => {
  try {
    run();
  } catch (err) {
    assert.ok(err instanceof ManifestError, String(err));
    return err.problems.map((p) => ({ file: p.file, kind: p.kind, name: p.name, path: p.path, message: p.message }));
  }
  assert.fail('accepted');
};

/**
 * A file of Cluster API's e2e data at the pinned release (setup copies it), as published, with its Dev kinds swapped for
 * the local provider's: a DevCluster keeps its failure domains, the rest of the Docker backend goes.
 */
function e2eData(file: string): { file: string; text: string } {
  const docs = parseAllDocuments(readFileSync(join(clusterApiE2eData(), 'infrastructure-docker/main', file), 'utf8'))
    .map((d) => d.toJS() as Doc)
    .filter((d) => d);
  const swapped = docs.map((d) =>
    d.kind === 'DevCluster'
      ? { ...d, kind: 'LocalCluster', spec: { failureDomains: d.spec.backend.docker.failureDomains } }
      : d.kind === 'DevMachineTemplate'
        ? { ...d, kind: 'LocalMachineTemplate', spec: { template: { spec: {} } } }
        : JSON.parse(JSON.stringify(d).replace(/"kind":"Dev(Cluster|MachineTemplate)"/g, '"kind":"Local$1"')),
  );
  return { file, text: swapped.map((d) => stringify(d)).join('---\n') };
}

test("Cluster API's e2e cluster-with-kcp and md as published (Dev kinds swapped): the LocalCluster declares the DevCluster's failure domains, and the MachineDeployment's fd4 is one of them", () => {
  const vars = {
    CLUSTER_NAME: 'e2e',
    NAMESPACE: 'default',
    KUBERNETES_VERSION: availableKubernetesVersions().at(-1)!,
    CONTROL_PLANE_MACHINE_COUNT: '3',
    WORKER_MACHINE_COUNT: '2',
    // As Cluster API's own e2e config sets them.
    DOCKER_SERVICE_CIDRS: '10.128.0.0/12',
    DOCKER_POD_CIDRS: '192.168.0.0/16',
    DOCKER_SERVICE_DOMAIN: 'cluster.local',
  };
  const [model] = loadManifests([e2eData('bases/cluster-with-kcp.yaml'), e2eData('bases/md.yaml')], vars);
  assert.equal(model!.machineDeployments[0]!.template.failureDomain, 'fd4');
  assert.deepEqual(
    (model!.infrastructure.spec?.failureDomains as { name: string; controlPlane: boolean }[])
      .filter((d) => d.controlPlane)
      .map((d) => d.name),
    ['fd1', 'fd2', 'fd3'],
  );
});

for (const release of ['v1.14', 'v1.10'] as const) {
  test(`Cluster API ${release} e2e cluster-with-kcp + md, adapted without the DevCluster's failure domains: only the MachineDeployment's fd4, which the LocalCluster then does not declare, is refused`, () => {
    assert.deepEqual(
      problemsOf(() => loadManifests([upstream(release, 'cluster-with-kcp'), upstream(release, 'md')], {})),
      [
        {
          file: `capi-${release}-md.yaml`,
          kind: 'MachineDeployment',
          name: 'capi-e2e-md-0',
          path: 'spec.template.spec.failureDomain',
          message: 'failure domain fd4 is not one the LocalCluster declares',
        },
      ],
    );
  });

  test(`Cluster API ${release} e2e MachineHealthCheck: with the md-remediation flavor's template label it checks that MachineDeployment; alone it selects nothing and is refused`, () => {
    // The md-remediation flavor labels the MachineDeployment's machines for its MachineHealthCheck, as upstream's kustomize patch does.
    const labelled = (text: string) =>
      withoutFailureDomain(text).replace(
        '  template:\n    spec:\n      clusterName',
        '  template:\n    metadata:\n      labels:\n        e2e.remediation.label: ""\n    spec:\n      clusterName',
      );
    const [model] = loadManifests(
      [upstream(release, 'cluster-with-kcp'), upstream(release, 'md', labelled), upstream(release, 'mhc')],
      {},
    );
    assert.deepEqual(model!.machineDeployments[0]!.healthCheck, {
      name: 'capi-e2e-mhc-0',
      unhealthyNodeConditions: [{ type: 'e2e.remediation.condition', status: 'False', timeoutSeconds: 10 }],
      nodeStartupTimeoutSeconds: 600,
      maxUnhealthy: '100%',
    });
    assert.equal(model!.controlPlane.healthCheck, undefined);
    const [problem] = problemsOf(() =>
      loadManifests(
        [
          upstream(release, 'cluster-with-kcp'),
          upstream(release, 'md', withoutFailureDomain),
          upstream(release, 'mhc'),
        ],
        {},
      ),
    );
    assert.deepEqual(
      [problem!.file, problem!.kind, problem!.path],
      [`capi-${release}-mhc.yaml`, 'MachineHealthCheck', 'spec.selector.matchLabels'],
    );
    assert.match(problem!.message, /selects no machine of cluster capi-e2e/);
  });
}

test('Cluster API e2e cluster without the failure domain: accepted with upstream defaults, the same model from v1beta1 (v1.10) and v1beta2 (v1.14)', () => {
  const load = (release: 'v1.14' | 'v1.10') =>
    loadManifests([upstream(release, 'cluster-with-kcp'), upstream(release, 'md', withoutFailureDomain)], {});
  const [model] = load('v1.14');
  assert.deepEqual(
    [model!.name, model!.labels, model!.serviceSubnet, model!.podSubnet, model!.serviceDomain, model!.paused],
    ['capi-e2e', { cni: 'capi-e2e-crs-0' }, '10.128.0.0/12', '192.168.0.0/16', 'cluster.local', false],
  );
  const cp = model!.controlPlane;
  // The apiserver's certificate carries upstream's extra names and addresses (certSANs), as kubeadm's would.
  const certSANs = {
    clusterConfiguration: { apiServer: { certSANs: ['localhost', '127.0.0.1', '0.0.0.0', 'host.docker.internal'] } },
  };
  assert.deepEqual(
    [cp.replicas, cp.version, cp.maxSurge, cp.kubeadmConfigSpec, cp.infrastructure],
    [3, 'v1.36.3', 1, certSANs, { kind: 'LocalMachineTemplate', name: 'capi-e2e-control-plane', spec: {} }],
  );
  const md = model!.machineDeployments[0]!;
  assert.deepEqual(
    [md.replicas, md.strategy, md.minReadySeconds, md.revisionHistoryLimit, md.paused],
    [2, { type: 'RollingUpdate', maxSurge: 1, maxUnavailable: 0, deletionOrder: 'Random' }, 0, 10, false],
  );
  assert.deepEqual(
    md.template.bootstrap,
    { kind: 'KubeadmConfigTemplate', name: 'capi-e2e-md-0', config: {} },
    "a KubeadmConfigTemplate with no spec: kubeadm's defaults",
  );
  assert.deepEqual([md.template.labels, md.template.annotations, md.template.failureDomain], [{}, {}, undefined]);
  // v1beta1's empty nodeRegistration blocks are the only difference: they say nothing kubeadm would not default.
  const [older] = load('v1.10');
  assert.deepEqual(older!.controlPlane.kubeadmConfigSpec, {
    ...certSANs,
    initConfiguration: { nodeRegistration: {} },
    joinConfiguration: { nodeRegistration: {} },
  });
  older!.controlPlane.kubeadmConfigSpec = certSANs;
  older!.machineDeployments[0]!.template.bootstrap.config = {};
  assert.deepEqual(older, model);
});

test("MachineHealthChecks reach the owner they select, in one shape from v1beta1 and v1beta2; the control plane's remediation strategy too", () => {
  const v2 = baseDocs();
  byKind(v2, 'KubeadmControlPlane').spec.remediation = { maxRetry: 2, retryPeriodSeconds: 60 };
  const [model] = loadManifests(
    [
      {
        file: 'c.yaml',
        text: render([
          ...v2,
          mhc(
            { 'cluster.x-k8s.io/control-plane-name': 'quickstart-control-plane' },
            {
              checks: { unhealthyNodeConditions: [{ type: 'Ready', status: 'Unknown', timeoutSeconds: 30 }] },
              remediation: { triggerIf: { unhealthyInRange: '[1-2]' } },
            },
          ),
          {
            ...mhc(
              { 'cluster.x-k8s.io/deployment-name': 'quickstart-md-0' },
              {
                checks: { nodeStartupTimeoutSeconds: 0 },
                remediation: { triggerIf: { unhealthyLessThanOrEqualTo: '40%' } },
              },
            ),
            metadata: { name: 'workers' },
          },
        ]),
      },
    ],
    {},
  );
  assert.deepEqual(model!.controlPlane.healthCheck, {
    name: 'quickstart-mhc',
    unhealthyNodeConditions: [{ type: 'Ready', status: 'Unknown', timeoutSeconds: 30 }],
    nodeStartupTimeoutSeconds: 600,
    unhealthyRange: { min: 1, max: 2 },
  });
  assert.deepEqual(model!.controlPlane.remediation, { maxRetry: 2, retryPeriodSeconds: 60 });
  assert.deepEqual(model!.machineDeployments[0]!.healthCheck, {
    name: 'workers',
    unhealthyNodeConditions: [],
    nodeStartupTimeoutSeconds: 0,
    maxUnhealthy: '40%',
  });

  const v1 = docsOf(v1beta1);
  byKind(v1, 'KubeadmControlPlane').spec.remediationStrategy = {
    maxRetry: 1,
    retryPeriod: '30s',
    minHealthyPeriod: '2h',
  };
  const [older] = loadManifests(
    [
      {
        file: 'c.yaml',
        text: render([
          ...v1,
          {
            apiVersion: 'cluster.x-k8s.io/v1beta1',
            kind: 'MachineHealthCheck',
            metadata: { name: 'workers' },
            spec: {
              clusterName: 'quickstart',
              maxUnhealthy: '40%',
              nodeStartupTimeout: '0s',
              selector: { matchLabels: { 'cluster.x-k8s.io/deployment-name': 'quickstart-md-0' } },
            },
          },
        ]),
      },
    ],
    {},
  );
  assert.deepEqual(older!.controlPlane.remediation, {
    maxRetry: 1,
    retryPeriodSeconds: 30,
    minHealthyPeriodSeconds: 7200,
  });
  assert.deepEqual(older!.machineDeployments[0]!.healthCheck, model!.machineDeployments[0]!.healthCheck);
});

test("unhealthyMachineConditions reach the owner's check from v1beta2 (timeoutSeconds) and v1beta1 (timeout); a check without them carries none", () => {
  const quickStart = [
    { type: 'NodeReady', status: 'Unknown', timeoutSeconds: 300 },
    { type: 'NodeReady', status: 'False', timeoutSeconds: 300 },
  ];
  const workers = { 'cluster.x-k8s.io/deployment-name': 'quickstart-md-0' };
  const [model] = loadManifests(
    [
      {
        file: 'c.yaml',
        text: render([...baseDocs(), mhc(workers, { checks: { unhealthyMachineConditions: quickStart } })]),
      },
    ],
    {},
  );
  assert.deepEqual(model!.machineDeployments[0]!.healthCheck, {
    name: 'quickstart-mhc',
    unhealthyNodeConditions: [],
    unhealthyMachineConditions: quickStart,
    nodeStartupTimeoutSeconds: 600,
  });
  const v1 = {
    apiVersion: 'cluster.x-k8s.io/v1beta1',
    kind: 'MachineHealthCheck',
    metadata: { name: 'quickstart-mhc' },
    spec: {
      clusterName: 'quickstart',
      selector: { matchLabels: workers },
      unhealthyMachineConditions: quickStart.map(({ type, status }) => ({ type, status, timeout: '5m' })),
    },
  };
  const [older] = loadManifests([{ file: 'c.yaml', text: render([...docsOf(v1beta1), v1]) }], {});
  assert.deepEqual(older!.machineDeployments[0]!.healthCheck, model!.machineDeployments[0]!.healthCheck);
  const [none] = loadManifests([{ file: 'c.yaml', text: render([...baseDocs(), mhc(workers)]) }], {});
  assert.equal('unhealthyMachineConditions' in none!.machineDeployments[0]!.healthCheck!, false);
});

test('a check of a machine condition capt never sets is refused where it is written, naming the conditions capt sets', () => {
  const check = mhc(
    { 'cluster.x-k8s.io/deployment-name': 'quickstart-md-0' },
    { checks: { unhealthyMachineConditions: [{ type: 'EtcdMemberHealthy', status: 'False', timeoutSeconds: 60 }] } },
  );
  const docs = [...baseDocs(), check];
  assert.throws(
    () => loadManifests([{ file: 'cluster.yaml', text: render(docs) }], {}),
    (err: unknown) => {
      assert.ok(err instanceof ManifestError, `a ManifestError, got ${err}`);
      assert.deepEqual(
        err.problems.map(({ file, index, kind, name, path }) => ({ file, index, kind, name, path })),
        [
          {
            file: 'cluster.yaml',
            index: docs.length - 1,
            kind: 'MachineHealthCheck',
            name: 'quickstart-mhc',
            path: 'spec.checks.unhealthyMachineConditions[0].type',
          },
        ],
      );
      assert.equal(
        err.problems[0]!.message,
        'capt sets no EtcdMemberHealthy condition on a Machine (it sets Ready, BootstrapConfigReady, InfrastructureReady, BootstrapExecSucceeded, NodeReady, NodeHealthy, Deleting, Available, UpToDate, Updating), so this check would never match',
      );
      assert.match(
        err.message,
        /^cluster\.yaml \(document \d+\) MachineHealthCheck\/quickstart-mhc at spec\.checks\.unhealthyMachineConditions\[0\]\.type: capt sets no EtcdMemberHealthy/,
      );
      assert.match(err.message, /hint: check NodeReady with status Unknown or False/);
      return true;
    },
  );
});

test("a KubeadmControlPlane's machineTemplate.metadata reaches the model from v1beta1 and v1beta2; a control-plane MachineHealthCheck selects by its labels", () => {
  // As a ClusterClass topology writes it, and as Cluster API's control-plane MachineHealthCheck selects it.
  const metadata = {
    labels: { 'topology.cluster.x-k8s.io/owned': '', tier: 'control' },
    annotations: { 'example.com/owner': 'platform' },
  };
  const topologyCheck = mhc({ 'cluster.x-k8s.io/control-plane': '', 'topology.cluster.x-k8s.io/owned': '' });
  const v2 = baseDocs();
  byKind(v2, 'KubeadmControlPlane').spec.machineTemplate.metadata = metadata;
  const v1 = docsOf(v1beta1);
  byKind(v1, 'KubeadmControlPlane').spec.machineTemplate.metadata = metadata;
  const [model] = loadManifests([{ file: 'c.yaml', text: render([...v2, topologyCheck]) }], {});
  const [older] = loadManifests([{ file: 'c.yaml', text: render([...v1, topologyCheck]) }], {});
  assert.deepEqual(
    [model!.controlPlane.labels, model!.controlPlane.annotations],
    [metadata.labels, metadata.annotations],
  );
  assert.equal(model!.controlPlane.healthCheck?.name, 'quickstart-mhc');
  assert.deepEqual(older, model);

  // Without them the model is as before (no empty maps: an unchanged manifest stays an unchanged spec).
  const [plain] = loadManifests([{ file: 'quickstart.yaml', text: quickstart }], {});
  assert.deepEqual([plain!.controlPlane.labels, plain!.controlPlane.annotations], [undefined, undefined]);
  const [problem] = problemsOf(() =>
    loadManifests([{ file: 'c.yaml', text: render([...baseDocs(), topologyCheck]) }], {}),
  );
  assert.deepEqual([problem!.kind, problem!.path], ['MachineHealthCheck', 'spec.selector.matchLabels']);
  assert.match(problem!.message, /selects no machine of cluster quickstart/);
});

test('a Machine of its own joins the model with its KubeadmConfig and LocalMachine, its labels and timeouts', () => {
  const docs = baseDocs();
  const [model] = loadManifests(
    [
      {
        file: 'c.yaml',
        text: render([
          ...docs,
          ...lone(docs, {
            metadata: { name: 'lone', labels: { role: 'lone' } },
            spec: { deletion: { nodeDrainTimeoutSeconds: 30 } },
          }),
        ]),
      },
    ],
    {},
  );
  assert.deepEqual(model!.machines, [
    {
      name: 'lone',
      template: {
        clusterName: 'quickstart',
        version: model!.controlPlane.version,
        labels: { role: 'lone' },
        annotations: {},
        nodeDrainTimeoutSeconds: 30,
        bootstrap: { kind: 'KubeadmConfig', name: 'lone', config: {} },
        infrastructure: { kind: 'LocalMachine', name: 'lone', spec: { bootDelaySeconds: 2 } },
      },
    },
  ]);
});

test("control-plane components' extraArgs and extraVolumes reach the model from v1beta1 maps and v1beta2 lists; a flag the version lacks is refused where the tools are", () => {
  const volume = { name: 'audit', hostPath: '/var/log/audit', mountPath: '/var/log/kubernetes', readOnly: false };
  const withComponents = (text: string, args: unknown) => {
    const docs = docsOf(text);
    byKind(docs, 'KubeadmControlPlane').spec.kubeadmConfigSpec.clusterConfiguration = {
      apiServer: { extraArgs: args, extraVolumes: [{ ...volume, pathType: '' }] },
      scheduler: { extraVolumes: [{ ...volume, name: 'ro', readOnly: true, pathType: 'DirectoryOrCreate' }] },
    };
    return [{ file: 'cluster.yaml', text: render(docs) }];
  };
  const [a] = loadManifests(withComponents(quickstart, [{ name: 'audit-log-maxage', value: '7' }]), {});
  const [b] = loadManifests(withComponents(v1beta1, { 'audit-log-maxage': '7' }), {});
  assert.deepEqual(a, b);
  assert.deepEqual(a!.controlPlane.kubeadmConfigSpec.clusterConfiguration, {
    apiServer: { extraArgs: { 'audit-log-maxage': '7' }, extraVolumes: [volume] },
    scheduler: { extraVolumes: [{ ...volume, name: 'ro', readOnly: true, pathType: 'DirectoryOrCreate' }] },
  });
  const versions = availableKubernetesVersions();
  const unknown = withComponents(quickstart, [{ name: 'audit-log-max-age', value: '7' }]);
  assert.doesNotThrow(() =>
    loadManifests(withComponents(quickstart, [{ name: 'audit-log-maxage', value: '7' }]), {}, versions),
  );
  assert.deepEqual(
    problemsOf(() => loadManifests(unknown, {}, versions)).map((p) => [p.kind, p.path, p.message]),
    [
      [
        'KubeadmControlPlane',
        'spec.kubeadmConfigSpec.clusterConfiguration.apiServer.extraArgs',
        `kube-apiserver ${byKind(docsOf(quickstart), 'KubeadmControlPlane').spec.version} has no flag --audit-log-max-age`,
      ],
    ],
  );
});

test('taints reach the model from a MachineDeployment template, a Machine and a control plane, v1beta1 and v1beta2; bad ones are refused where they are written', () => {
  const taints = [
    { key: 'example.com/dedicated', value: 'gold', effect: 'NoSchedule', propagation: 'Always' },
    { key: 'example.com/warming', effect: 'PreferNoSchedule', propagation: 'OnInitialization' },
  ];
  const v2 = baseDocs();
  byKind(v2, 'MachineDeployment').spec.template.spec.taints = taints;
  byKind(v2, 'KubeadmControlPlane').spec.machineTemplate.spec.taints = taints.slice(0, 1);
  const v1 = docsOf(v1beta1);
  byKind(v1, 'MachineDeployment').spec.template.spec.taints = taints;
  byKind(v1, 'KubeadmControlPlane').spec.machineTemplate.taints = taints.slice(0, 1);
  const [model] = loadManifests([{ file: 't.yaml', text: render(v2) }], {});
  const [older] = loadManifests([{ file: 't.yaml', text: render(v1) }], {});
  assert.deepEqual(model!.machineDeployments[0]!.template.taints, taints);
  assert.deepEqual(model!.controlPlane.taints, taints.slice(0, 1));
  assert.deepEqual(older, model);
  const docs = baseDocs();
  const [alone] = loadManifests([{ file: 't.yaml', text: render([...docs, ...lone(docs, { spec: { taints } })]) }], {});
  assert.deepEqual(alone!.machines![0]!.template.taints, taints);
  assert.equal(alone!.machineDeployments[0]!.template.taints, undefined, 'none given, none in the model');

  const refused = (taint: Record<string, unknown>, path: string, message: RegExp) => {
    const docs = baseDocs();
    byKind(docs, 'MachineDeployment').spec.template.spec.taints = [taint];
    const [problem] = problemsOf(() => loadManifests([{ file: 't.yaml', text: render(docs) }], {}));
    assert.deepEqual([problem!.kind, problem!.path], ['MachineDeployment', `spec.template.spec.taints[0]${path}`]);
    assert.match(problem!.message, message);
  };
  refused(
    { key: 'node.cluster.x-k8s.io/uninitialized', effect: 'NoSchedule', propagation: 'Always' },
    '.key',
    /Cluster API's own/,
  );
  refused({ key: 'a b', effect: 'NoSchedule', propagation: 'Always' }, '.key', /taint key/);
  refused({ key: 'k', effect: 'Sometimes', propagation: 'Always' }, '.effect', /NoSchedule/);
  refused({ key: 'k', effect: 'NoSchedule' }, '.propagation', /expected one of "Always"\|"OnInitialization"/);
  const twice = baseDocs();
  byKind(twice, 'MachineDeployment').spec.template.spec.taints = [taints[0], { ...taints[0], value: 'silver' }];
  const [problem] = problemsOf(() => loadManifests([{ file: 't.yaml', text: render(twice) }], {}));
  assert.match(problem!.message, /taint example\.com\/dedicated with effect NoSchedule is given twice/);
});

test("a kubelet's max-pods reaches the model from a v1beta1 map and a v1beta2 list; one no kubelet runs with is refused where it is written", () => {
  const withMaxPods = (text: string, list: boolean, value: string) => {
    const docs = docsOf(text);
    const args = list ? [{ name: 'max-pods', value }] : { 'max-pods': value };
    byKind(docs, 'KubeadmConfigTemplate').spec.template.spec = {
      joinConfiguration: { nodeRegistration: { kubeletExtraArgs: args } },
    };
    byKind(docs, 'KubeadmControlPlane').spec.kubeadmConfigSpec.initConfiguration = {
      nodeRegistration: { kubeletExtraArgs: args },
    };
    return [{ file: 'cluster.yaml', text: render(docs) }];
  };
  const [a] = loadManifests(withMaxPods(quickstart, true, '250'), {});
  const [b] = loadManifests(withMaxPods(v1beta1, false, '250'), {});
  assert.deepEqual(a!.machineDeployments[0]!.template.bootstrap, b!.machineDeployments[0]!.template.bootstrap);
  assert.deepEqual(
    a!.machineDeployments[0]!.template.bootstrap.config.joinConfiguration?.nodeRegistration?.kubeletExtraArgs,
    {
      'max-pods': '250',
    },
  );
  for (const [text, list, value, at] of [
    [quickstart, true, '0', 'kubeletExtraArgs[0].value'],
    [v1beta1, false, 'many', 'kubeletExtraArgs.max-pods'],
    [quickstart, true, '10001', 'kubeletExtraArgs[0].value'],
    [v1beta1, false, '1.5', 'kubeletExtraArgs.max-pods'],
  ] as const) {
    const problems = problemsOf(() => loadManifests(withMaxPods(text, list, value), {}));
    const message = `max-pods "${value}" is not a whole number from 1 to 10000`;
    assert.deepEqual(
      problems.map((p) => [p.kind, p.path]),
      [
        ['KubeadmControlPlane', `spec.kubeadmConfigSpec.initConfiguration.nodeRegistration.${at}`],
        ['KubeadmConfigTemplate', `spec.template.spec.joinConfiguration.nodeRegistration.${at}`],
      ],
      value,
    );
    assert.ok(problems.every((p) => p.message.startsWith(message)));
  }
});
