import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseAllDocuments, stringify } from 'yaml';
import { loadManifests } from '../../src/api/load-manifests';
import { ManifestError } from '../../src/api/manifest-error';
import { substituteVariables } from '../../src/api/variables';

// The quick-start ClusterClass on the local provider, rendered by Cluster API's own topology code (setup builds
// it from the pinned module): no test double between these manifests and the model capt runs.
const root = join(__dirname, '../../..');
const example = readFileSync(join(root, 'examples/clusterclass-quickstart.yaml'), 'utf8');

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Doc = any;
const docsOf = (text: string): Doc[] => parseAllDocuments(substituteVariables(text, {}).text).map((d) => d.toJS());
const render = (docs: Doc[]) => docs.map((d) => stringify(d)).join('---\n');
const byKind = (docs: Doc[], kind: string) => docs.find((d) => d.kind === kind);
const load = (docs: Doc[] = docsOf(example)) => loadManifests([{ file: 'class.yaml', text: render(docs) }], {});

test('a Cluster with spec.topology becomes the model capt runs: control plane, MachineDeployment, health checks, patches applied', () => {
  const [model, ...rest] = load();
  assert.equal(rest.length, 0);
  assert.equal(model!.name, 'dev');
  assert.equal(model!.infrastructure.kind, 'LocalCluster');
  assert.match(model!.infrastructure.name, /^dev-[a-z0-9]{5}$/);
  const cp = model!.controlPlane;
  assert.match(cp.name, /^dev-[a-z0-9]{5}$/);
  assert.equal(cp.replicas, 1);
  assert.equal(cp.version, 'v1.36.3');
  assert.equal(cp.infrastructure.kind, 'LocalMachineTemplate');
  assert.match(cp.infrastructure.name, /^dev-control-plane-[a-z0-9]{5}$/);
  // The nodePoolLabels patch, a template over a variable's default, after the template's own argument.
  assert.deepEqual(cp.kubeadmConfigSpec.initConfiguration?.nodeRegistration?.kubeletExtraArgs, {
    'eviction-hard': 'nodefs.available<0%,nodefs.inodesFree<0%,imagefs.available<0%',
    'node-labels': 'capt.example/pool=control-plane',
  });
  assert.deepEqual(cp.kubeadmConfigSpec.clusterConfiguration?.apiServer?.certSANs, ['localhost', '127.0.0.1']);
  assert.equal(cp.healthCheck?.name, cp.name);
  assert.equal(model!.machineDeployments.length, 1);
  const md = model!.machineDeployments[0]!;
  assert.match(md.name, /^dev-md-0-[a-z0-9]{5}$/);
  assert.equal(md.replicas, 2);
  assert.equal(md.template.version, 'v1.36.3');
  assert.equal(md.template.labels['topology.cluster.x-k8s.io/deployment-name'], 'md-0');
  assert.equal(
    md.template.bootstrap.config.joinConfiguration?.nodeRegistration?.kubeletExtraArgs?.['node-labels'],
    'capt.example/pool=md-0',
    'the builtin variable machineDeployment.topologyName reached the template',
  );
  assert.equal(md.healthCheck?.name, md.name);
  assert.deepEqual(model!.topology, {
    class: 'quick-start',
    upgradeConcurrency: 1,
    machineDeployments: [{ name: md.name, topologyName: 'md-0', deferUpgrade: false, holdUpgradeSequence: false }],
  });
});

test("a class's health checks on the machines' own NodeReady (Cluster API's quick-start class) reach the control plane's and the workers' checks", () => {
  const docs = docsOf(example);
  const quickStart = [
    { type: 'NodeReady', status: 'Unknown', timeoutSeconds: 300 },
    { type: 'NodeReady', status: 'False', timeoutSeconds: 300 },
  ];
  const { controlPlane, workers } = byKind(docs, 'ClusterClass').spec;
  controlPlane.healthCheck.checks.unhealthyMachineConditions = quickStart;
  workers.machineDeployments[0].healthCheck.checks.unhealthyMachineConditions = quickStart;
  const [model] = load(docs);
  assert.deepEqual(model!.controlPlane.healthCheck?.unhealthyMachineConditions, quickStart);
  assert.deepEqual(model!.machineDeployments[0]!.healthCheck?.unhealthyMachineConditions, quickStart);
  assert.equal(model!.controlPlane.healthCheck?.unhealthyNodeConditions.length, 2, 'beside its Node conditions');
});

test("the workers' upgrade order: topology order, the Cluster's upgrade-concurrency, each topology's defer and hold annotations", () => {
  const docs = docsOf(example);
  const c = byKind(docs, 'Cluster');
  c.metadata.annotations = { 'topology.cluster.x-k8s.io/upgrade-concurrency': '2' };
  const [md0] = c.spec.topology.workers.machineDeployments;
  c.spec.topology.workers.machineDeployments = [
    { ...md0, name: 'zeta', metadata: { annotations: { 'topology.cluster.x-k8s.io/defer-upgrade': '' } } },
    { ...md0, name: 'alpha', metadata: { annotations: { 'topology.cluster.x-k8s.io/hold-upgrade-sequence': '' } } },
  ];
  const [model] = load(docs);
  assert.deepEqual(
    model!.topology!.machineDeployments.map((m) => [m.topologyName, m.deferUpgrade, m.holdUpgradeSequence]),
    [
      ['zeta', true, false],
      ['alpha', false, true],
    ],
    "the Cluster's order, not the names'",
  );
  assert.equal(model!.topology!.upgradeConcurrency, 2);
});

test("a class's kubernetesVersions reach the model, for the cluster workflow's chained upgrades", () => {
  const docs = docsOf(example);
  clusterClass(docs).spec.kubernetesVersions = ['v1.34.4', 'v1.35.4', 'v1.36.3'];
  assert.deepEqual(load(docs)[0]!.topology?.kubernetesVersions, ['v1.34.4', 'v1.35.4', 'v1.36.3']);
  assert.equal(load()[0]!.topology?.kubernetesVersions, undefined, 'absent without a list');
});

test('the same topology loaded twice names the same objects; a changed template gets a new name, its owner keeps its own', () => {
  const [first] = load();
  const [again] = load();
  assert.deepEqual(again, first);
  const docs = docsOf(example);
  byKind(docs, 'KubeadmConfigTemplate').spec.template.spec.preKubeadmCommands = ['echo changed'];
  const [changed] = load(docs);
  const [before, after] = [first!.machineDeployments[0]!, changed!.machineDeployments[0]!];
  assert.equal(after.name, before.name);
  assert.notEqual(after.template.bootstrap.name, before.template.bootstrap.name);
  assert.equal(after.template.infrastructure.name, before.template.infrastructure.name);
});

test('topology values reach the model: replicas, version, a variable a patch reads', () => {
  const docs = docsOf(example);
  const cluster = byKind(docs, 'Cluster');
  cluster.spec.topology.controlPlane.replicas = 3;
  cluster.spec.topology.version = 'v1.35.4';
  cluster.spec.topology.workers.machineDeployments[0].replicas = 5;
  cluster.spec.topology.variables.push({ name: 'apiServerCertSANs', value: ['api.example.com'] });
  const [model] = load(docs);
  assert.equal(model!.controlPlane.replicas, 3);
  assert.equal(model!.controlPlane.version, 'v1.35.4');
  assert.equal(model!.machineDeployments[0]!.replicas, 5);
  assert.equal(model!.machineDeployments[0]!.template.version, 'v1.35.4');
  assert.deepEqual(model!.controlPlane.kubeadmConfigSpec.clusterConfiguration?.apiServer?.certSANs, [
    'api.example.com',
  ]);
});

interface BadCase {
  name: string;
  mutate: (docs: Doc[]) => Doc[] | void;
  kind?: string;
  path?: string;
  message: RegExp;
}

const cluster = (d: Doc[]) => byKind(d, 'Cluster');
const clusterClass = (d: Doc[]) => byKind(d, 'ClusterClass');
const cases: BadCase[] = [
  {
    name: 'a variable the class does not define',
    mutate: (d) => void cluster(d).spec.topology.variables.push({ name: 'nope', value: 1 }),
    kind: 'Cluster',
    path: 'spec.topology.variables[nope]',
    message: /variable is not defined/,
  },
  {
    name: 'a variable of the wrong type',
    mutate: (d) => void (cluster(d).spec.topology.variables[0].value = 12),
    message: /string/,
  },
  {
    name: 'a variable failing its pattern',
    mutate: (d) => void cluster(d).spec.topology.variables.push({ name: 'nodePoolLabel', value: 'No Spaces' }),
    message: /should match|pattern/,
  },
  {
    name: 'a class that is not in the manifests',
    mutate: (d) => void (cluster(d).spec.topology.classRef.name = 'elsewhere'),
    kind: 'Cluster',
    path: 'spec.topology.classRef.name',
    message: /ClusterClass default\/elsewhere is not in the manifests/,
  },
  {
    name: 'a template the class names that is missing',
    mutate: (d) => d.filter((x) => x.kind !== 'LocalClusterTemplate'),
    kind: 'ClusterClass',
    path: 'spec.infrastructure.templateRef.name',
    message: /LocalClusterTemplate default\/quick-start-cluster is not in the manifests/,
  },
  {
    name: 'a ClusterClass no Cluster uses',
    mutate: (d) => d.filter((x) => x.kind !== 'Cluster'),
    kind: 'ClusterClass',
    message: /used by no Cluster's topology/,
  },
  {
    name: 'a MachineDeployment topology naming a class the ClusterClass lacks',
    mutate: (d) => void (cluster(d).spec.topology.workers.machineDeployments[0].class = 'gpu'),
    message: /gpu/,
  },
  {
    name: 'an external patch (Runtime SDK)',
    mutate: (d) =>
      void clusterClass(d).spec.patches.push({
        name: 'ext',
        external: { generatePatchesExtension: 'generate-patches.ext' },
      }),
    kind: 'ClusterClass',
    path: 'spec.patches[3].external',
    message: /Runtime SDK extension, which capt does not run/,
  },
  {
    name: 'machine pools in the topology',
    mutate: (d) =>
      void (cluster(d).spec.topology.workers.machinePools = [{ class: 'default-worker', name: 'mp-0', replicas: 1 }]),
    message: /machinePools|MachinePool/,
  },
  {
    name: 'a patch whose template is not valid',
    mutate: (d) =>
      void (clusterClass(d).spec.patches[2].definitions[1].jsonPatches[0].valueFrom.template = '{{ .nodePoolLabel '),
    message: /template|parse/,
  },
  {
    name: 'a patch to a path outside spec.template',
    mutate: (d) => void (clusterClass(d).spec.patches[2].definitions[1].jsonPatches[0].path = '/metadata/name'),
    message: /path|spec\/template/,
  },
  {
    name: 'a patch setting a field capt does not carry out (the etcd image)',
    mutate: (d) => void (cluster(d).spec.topology.variables[0].value = '3.5.3-0'),
    kind: 'KubeadmControlPlane',
    message: /unknown field 'etcd'/,
  },
  {
    name: 'a patch template that builds gigabytes (stopped by the memory limit, in seconds)',
    mutate: (d) =>
      void (clusterClass(d).spec.patches[2].definitions[1].jsonPatches[0].valueFrom.template =
        'value: {{ range until 200000000 }}xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx{{ end }}'),
    kind: 'ClusterClass',
    message: /ran out of the memory capt allows it/,
  },
  {
    name: 'a required variable with no value and no default',
    mutate: (d) => {
      delete clusterClass(d).spec.variables[0].schema.openAPIV3Schema.default;
      cluster(d).spec.topology.variables = [];
    },
    kind: 'Cluster',
    message: /required variable "etcdImageTag" must be set/,
  },
  {
    name: 'a variable schema of an unknown type',
    mutate: (d) => void (clusterClass(d).spec.variables[1].schema.openAPIV3Schema.type = 'arra'),
    kind: 'ClusterClass',
    path: 'spec.variables[apiServerCertSANs].schema.openAPIV3Schema.type',
    message: /arra/,
  },
  {
    name: 'a variable defined twice in the class',
    mutate: (d) => void clusterClass(d).spec.variables.push(structuredClone(clusterClass(d).spec.variables[2])),
    kind: 'ClusterClass',
    message: /nodePoolLabel/,
  },
  {
    name: 'a patch reading a variable the class does not define',
    mutate: (d) => void (clusterClass(d).spec.patches[1].definitions[0].jsonPatches[0].valueFrom.variable = 'sans'),
    kind: 'ClusterClass',
    message: /sans/,
  },
  {
    name: 'a patch with an operation JSON patch has but Cluster API does not take (move)',
    mutate: (d) => void (clusterClass(d).spec.patches[2].definitions[1].jsonPatches[0].op = 'move'),
    kind: 'ClusterClass',
    message: /move/,
  },
  {
    name: 'a variable failing its x-kubernetes-validations rule',
    mutate: (d) => {
      clusterClass(d).spec.variables[2].schema.openAPIV3Schema['x-kubernetes-validations'] = [
        { rule: "self.startsWith('capt.')", message: 'must start with capt.' },
      ];
      cluster(d).spec.topology.variables.push({ name: 'nodePoolLabel', value: 'example.com/pool' });
    },
    kind: 'Cluster',
    message: /must start with capt\./,
  },
  {
    name: 'two MachineDeployment topologies of one name',
    mutate: (d) =>
      void cluster(d).spec.topology.workers.machineDeployments.push(
        structuredClone(cluster(d).spec.topology.workers.machineDeployments[0]),
      ),
    kind: 'Cluster',
    message: /md-0/,
  },
  {
    name: 'a class naming a template kind no capt provider serves',
    mutate: (d) => {
      clusterClass(d).spec.workers.machineDeployments[0].infrastructure.templateRef.kind = 'DevMachineTemplate';
      d.find((x) => x.metadata.name === 'quick-start-default-worker-machinetemplate').kind = 'DevMachineTemplate';
    },
    message: /kind DevMachineTemplate is not served by any installed provider/,
  },
  {
    name: 'an upgrade-concurrency that is not a number',
    mutate: (d) => void (cluster(d).metadata.annotations = { 'topology.cluster.x-k8s.io/upgrade-concurrency': 'all' }),
    kind: 'Cluster',
    path: 'metadata.annotations.topology.cluster.x-k8s.io/upgrade-concurrency',
    message: /could not parse the value of the annotation/,
  },
  {
    name: "a class's naming template (capt names topology objects itself)",
    mutate: (d) =>
      void (clusterClass(d).spec.workers.machineDeployments[0].naming = {
        template: '{{ .cluster.name }}-{{ .machineDeployment.topologyName }}-{{ .random }}',
      }),
    kind: 'ClusterClass',
    path: 'spec.workers.machineDeployments[0].naming',
    message: /naming templates are not carried out/,
  },
  {
    // Cluster API's topology code makes the MachineHealthCheck, which capt's loader reads like a written one.
    name: "a class's health check on a machine condition capt never sets",
    mutate: (d) =>
      void (clusterClass(d).spec.controlPlane.healthCheck.checks.unhealthyMachineConditions = [
        { type: 'EtcdPodHealthy', status: 'False', timeoutSeconds: 300 },
      ]),
    kind: 'ClusterClass',
    path: 'spec.controlPlane.healthCheck.checks.unhealthyMachineConditions[0].type',
    message: /capt sets no EtcdPodHealthy condition on a Machine \(it sets Ready, .*NodeReady/,
  },
  {
    name: "a worker class's health check on a machine condition capt never sets",
    mutate: (d) =>
      void (clusterClass(d).spec.workers.machineDeployments[0].healthCheck.checks.unhealthyMachineConditions = [
        { type: 'EtcdPodHealthy', status: 'False', timeoutSeconds: 300 },
      ]),
    kind: 'ClusterClass',
    path: 'spec.workers.machineDeployments[0].healthCheck.checks.unhealthyMachineConditions[0].type',
    message: /capt sets no EtcdPodHealthy condition on a Machine/,
  },
  {
    name: "a topology's own health check for a MachineDeployment, on a machine condition capt never sets",
    mutate: (d) =>
      void (cluster(d).spec.topology.workers.machineDeployments[0].healthCheck = {
        checks: { unhealthyMachineConditions: [{ type: 'EtcdPodHealthy', status: 'False', timeoutSeconds: 60 }] },
      }),
    kind: 'Cluster',
    path: 'spec.topology.workers.machineDeployments[0].healthCheck.checks.unhealthyMachineConditions[0].type',
    message: /capt sets no EtcdPodHealthy condition on a Machine/,
  },
  {
    name: 'a topology version the provider cannot parse',
    mutate: (d) => void (cluster(d).spec.topology.version = 'latest'),
    message: /version/,
  },
  {
    name: "a class's kubernetesVersions entry with build metadata, which no machine runs",
    mutate: (d) => void (clusterClass(d).spec.kubernetesVersions = ['v1.35.4', 'v1.36.3+capt.1']),
    kind: 'ClusterClass',
    path: 'spec.kubernetesVersions[1]',
    message: /"v1.36.3\+capt.1" is not a version capt can run: a chained upgrade gives each listed version to machines/,
  },
  {
    // Cluster API's ClusterClass webhook, run by the renderer, checks the list has no gap.
    name: "a class's kubernetesVersions skipping a minor",
    mutate: (d) => void (clusterClass(d).spec.kubernetesVersions = ['v1.34.4', 'v1.36.3']),
    kind: 'ClusterClass',
    message: /expecting a version with minor 34 or 35, found version 1.36.3/,
  },
  {
    name: "a topology version the class's kubernetesVersions do not list",
    mutate: (d) => void (clusterClass(d).spec.kubernetesVersions = ['v1.35.4', 'v1.36.1']),
    kind: 'Cluster',
    path: 'spec.topology.version',
    message: /version must match one of the versions defined in the ClusterClass/,
  },
];

for (const c of cases) {
  test(`invalid topology: ${c.name}`, () => {
    const docs = docsOf(example);
    const changed = c.mutate(docs) ?? docs;
    assert.throws(
      () => load(changed),
      (err: unknown) => {
        assert.ok(err instanceof ManifestError, `a ManifestError, got ${err}`);
        const hit = err.problems.find(
          (p) =>
            c.message.test(p.message) &&
            (c.path === undefined || p.path === c.path) &&
            (c.kind === undefined || p.kind === c.kind),
        );
        assert.ok(
          hit,
          `expected a problem${c.kind ? ` on ${c.kind}` : ''} at ${c.path} matching ${c.message}; got:\n${err.message}`,
        );
        assert.equal(hit.file, 'class.yaml');
        assert.ok(Number.isInteger(hit.index));
        return true;
      },
    );
  });
}

test("a topology's taints (Cluster API's e2e topology-taints values) reach the control plane and the MachineDeployment, and a changed one names no new template", () => {
  const taints = [
    {
      effect: 'PreferNoSchedule',
      key: 'pre-existing-on-initialization-taint',
      propagation: 'OnInitialization',
      value: 'on-initialization-value',
    },
    { effect: 'PreferNoSchedule', key: 'pre-existing-always-taint', propagation: 'Always', value: 'always-value' },
  ];
  const docs = docsOf(example);
  const topology = byKind(docs, 'Cluster').spec.topology;
  topology.controlPlane.taints = taints;
  topology.workers.machineDeployments[0].taints = taints;
  const [model] = load(docs);
  const sorted = (list: unknown) => JSON.stringify(list, Object.keys(taints[0]!).sort());
  assert.equal(sorted(model!.controlPlane.taints), sorted(taints));
  assert.equal(sorted(model!.machineDeployments[0]!.template.taints), sorted(taints));
  topology.workers.machineDeployments[0].taints = taints.slice(1);
  const [changed] = load(docs);
  const md = changed!.machineDeployments[0]!;
  assert.equal(md.template.taints!.length, 1);
  assert.deepEqual(
    [md.template.bootstrap.name, md.template.infrastructure.name],
    [model!.machineDeployments[0]!.template.bootstrap.name, model!.machineDeployments[0]!.template.infrastructure.name],
    'taints change in place: the templates keep their names',
  );
});
