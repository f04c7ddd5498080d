import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { substituteVariables } from '../../src/api/variables';
import { appliedManifestAnnotation } from '../../src/bridge/bridge';
import { conversionDataAnnotation } from '../../src/conversion/conversion-data';
import { availableKubernetesVersions, clusterApiE2eData } from '../../src/tools';
import { parseAllDocuments } from 'yaml';
import { startDevStack, type DevStackUnderTest } from '../fixtures/dev-stack';
import { until } from '../fixtures/until';
import { postToWebhook } from '../fixtures/webhook-post';

/**
 * Cluster API's v1beta1 served through capt's conversion webhook, as `capt dev start` serves and registers it
 * (in the bridge): a v1beta1 cluster applied with kubectl is stored in v1beta2, reads back in both versions with
 * each version's shape, and reaches the bridge; a v1beta2 object read as v1beta1 and written again keeps every
 * field. The clusters are paused: no machine is made.
 */

const version = availableKubernetesVersions().at(-1)!;
let stack: DevStackUnderTest;
const kube = (input: string | undefined, ...args: string[]) => stack.kubectl(input, ...args);
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

async function getJson(resource: string, name: string): Promise<Json> {
  const got = await kube(undefined, 'get', resource, name, '-o', 'json');
  assert.equal(got.code, 0, got.stderr);
  return JSON.parse(got.stdout) as Json;
}

/**
 * test/api/manifests/quickstart-v1beta1.yaml as `name`, paused, with a v1beta1-only field (revisionHistoryLimit)
 * and the selector Cluster API's defaulting would add; the local provider's kinds are v1beta2 only.
 */
async function v1beta1Cluster(name: string): Promise<string> {
  const text = await readFile(join(__dirname, '../../../test/api/manifests/quickstart-v1beta1.yaml'), 'utf8');
  return text
    .replaceAll('quickstart', name)
    .replace(
      /^apiVersion: infrastructure\.cluster\.x-k8s\.io\/v1beta1$/gm,
      'apiVersion: infrastructure.cluster.x-k8s.io/v1beta2',
    )
    .replace(/^spec:\n {2}clusterNetwork:/m, 'spec:\n  paused: true\n  clusterNetwork:')
    .replace(
      `  clusterName: ${name}\n  replicas: 2\n`,
      `  clusterName: ${name}\n  replicas: 2\n  revisionHistoryLimit: 3\n  selector:\n    matchLabels:\n      node.cluster.x-k8s.io/pool: md-0\n`,
    );
}

before(async () => {
  stack = await startDevStack();
  console.log(`# capt dev start (with the bridge's conversion webhook registered): ${stack.started.ms} ms`);
});

after(() => stack.remove());

test('a v1beta1 cluster applied with kubectl reads back in v1beta1 as written and in v1beta2 in its shape, and the bridge takes it', async () => {
  const applied = await kube(await v1beta1Cluster('oldapi'), 'apply', '-f', '-');
  assert.equal(applied.code, 0, applied.stderr);

  const cluster1 = await getJson('clusters.v1beta1.cluster.x-k8s.io', 'oldapi');
  assert.equal(cluster1.apiVersion, 'cluster.x-k8s.io/v1beta1');
  assert.deepEqual(cluster1.spec.controlPlaneRef, {
    apiVersion: 'controlplane.cluster.x-k8s.io/v1beta1',
    kind: 'KubeadmControlPlane',
    name: 'oldapi-control-plane',
  });
  assert.equal(cluster1.metadata.annotations?.[conversionDataAnnotation], undefined, 'data for v1beta1 is consumed');
  const cluster2 = await getJson('clusters.v1beta2.cluster.x-k8s.io', 'oldapi');
  assert.equal(cluster2.apiVersion, 'cluster.x-k8s.io/v1beta2');
  assert.equal(cluster2.spec.paused, true);
  assert.deepEqual(cluster2.spec.controlPlaneRef, {
    apiGroup: 'controlplane.cluster.x-k8s.io',
    kind: 'KubeadmControlPlane',
    name: 'oldapi-control-plane',
  });
  assert.deepEqual(cluster2.spec.clusterNetwork.pods, { cidrBlocks: ['10.244.0.0/16'] });

  const kcp1 = await getJson('kubeadmcontrolplanes.v1beta1.controlplane.cluster.x-k8s.io', 'oldapi-control-plane');
  assert.equal(kcp1.spec.machineTemplate.infrastructureRef.apiVersion, 'infrastructure.cluster.x-k8s.io/v1beta1');
  assert.deepEqual(kcp1.spec.kubeadmConfigSpec.initConfiguration.nodeRegistration.kubeletExtraArgs, {
    'node-labels': 'capt.example/pool=control-plane',
  });
  const kcp2 = await getJson('kubeadmcontrolplanes.v1beta2.controlplane.cluster.x-k8s.io', 'oldapi-control-plane');
  assert.deepEqual(kcp2.spec.machineTemplate.spec.infrastructureRef, {
    apiGroup: 'infrastructure.cluster.x-k8s.io',
    kind: 'LocalMachineTemplate',
    name: 'oldapi-control-plane',
  });
  assert.deepEqual(kcp2.spec.kubeadmConfigSpec.initConfiguration.nodeRegistration.kubeletExtraArgs, [
    { name: 'node-labels', value: 'capt.example/pool=control-plane' },
  ]);

  const md1 = await getJson('machinedeployments.v1beta1.cluster.x-k8s.io', 'oldapi-md-0');
  assert.equal(md1.spec.template.spec.nodeDrainTimeout, '5m', 'as written, not 5m0s');
  assert.equal(md1.spec.revisionHistoryLimit, 3, 'a v1beta1-only field comes back');
  assert.deepEqual(md1.spec.strategy, { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } });
  const md2 = await getJson('machinedeployments.v1beta2.cluster.x-k8s.io', 'oldapi-md-0');
  assert.equal(md2.spec.template.spec.deletion.nodeDrainTimeoutSeconds, 300);
  assert.deepEqual(md2.spec.rollout.strategy, {
    type: 'RollingUpdate',
    rollingUpdate: { maxSurge: 1, maxUnavailable: 0 },
  });
  assert.equal(md2.spec.revisionHistoryLimit, undefined);
  assert.match(md2.metadata.annotations[conversionDataAnnotation], /"revisionHistoryLimit"\],"value":3/);

  // The bridge reads v1beta2: it takes the cluster as capt apply would (nothing refused).
  const cluster = await until('the bridge to apply Cluster oldapi', async () => {
    const got = await getJson('clusters.v1beta2.cluster.x-k8s.io', 'oldapi');
    // Applied, and its status written (a moment apart).
    return got.metadata.annotations?.[appliedManifestAnnotation] && got.status?.conditions ? got : undefined;
  });
  const conditions = (cluster.status?.conditions ?? []) as { type: string; status: string; message?: string }[];
  assert.deepEqual(
    conditions.filter((c) => c.type === 'Accepted' && c.status === 'False'),
    [],
  );
  // Status written by the bridge in v1beta2 reads in v1beta1's places.
  const status1 = (await getJson('clusters.v1beta1.cluster.x-k8s.io', 'oldapi')).status as Json;
  assert.deepEqual(
    status1.v1beta2?.conditions?.map((c: Json) => c.type),
    cluster.status.conditions.map((c: Json) => c.type),
  );
});

/** Reads `resource` NAME in v1beta1 and writes that back (kubectl replace), again if the bridge wrote meanwhile. */
async function rewriteInV1beta1(resource: string, name: string): Promise<void> {
  await until(`kubectl replace of ${resource} ${name} in v1beta1`, async () => {
    const read = await kube(undefined, 'get', resource.replace('.', '.v1beta1.'), name, '-o', 'json');
    assert.equal(read.code, 0, read.stderr);
    const object = JSON.parse(read.stdout) as Json;
    assert.equal(object.apiVersion.split('/')[1], 'v1beta1');
    const written = await kube(read.stdout, 'replace', '-f', '-');
    if (written.code !== 0 && !/the object has been modified/.test(written.stderr)) assert.fail(written.stderr);
    return written.code === 0;
  });
}

test('a v1beta2 object read as v1beta1 and written again keeps every field', async () => {
  const text = substituteVariables(await readFile(join(__dirname, '../../../examples/quickstart.yaml'), 'utf8'), {
    CLUSTER_NAME: 'newapi',
    KUBERNETES_VERSION: version,
  })
    .text.replace(/^spec:\n {2}clusterNetwork:/m, 'spec:\n  paused: true\n  clusterNetwork:')
    // What v1beta1 writes otherwise: seconds that are not a whole minute, kubelet arguments out of name order.
    .replace('nodeDrainTimeoutSeconds: 300', 'nodeDrainTimeoutSeconds: 90')
    .replace(
      /^( {8})kubeletExtraArgs:\n/m,
      '$1kubeletExtraArgs:\n$1  - name: v\n$1    value: "2"\n$1  - name: cgroup-root\n$1    value: /kubelet\n',
    );
  const applied = await kube(text, 'apply', '-f', '-');
  assert.equal(applied.code, 0, applied.stderr);
  const resources: [string, string][] = [
    ['clusters.cluster.x-k8s.io', 'newapi'],
    ['kubeadmcontrolplanes.controlplane.cluster.x-k8s.io', 'newapi-control-plane'],
    ['machinedeployments.cluster.x-k8s.io', 'newapi-md-0'],
    ['kubeadmconfigtemplates.bootstrap.cluster.x-k8s.io', 'newapi-md-0'],
  ];
  for (const [resource, name] of resources) {
    const before = await getJson(resource.replace('.', '.v1beta2.'), name);
    await rewriteInV1beta1(resource, name);
    const afterwards = await getJson(resource.replace('.', '.v1beta2.'), name);
    assert.deepEqual(afterwards.spec, before.spec, `${resource} ${name}`);
    assert.equal(afterwards.metadata.annotations?.[conversionDataAnnotation], undefined, 'nothing v1beta1-only kept');
  }
  const md = await getJson('machinedeployments.v1beta2.cluster.x-k8s.io', 'newapi-md-0');
  assert.equal(md.spec.template.spec.deletion.nodeDrainTimeoutSeconds, 90);
});

/** The conversion webhook's URL and authority, as the bridge registered them on the Cluster CRD. */
async function conversionClientConfig(): Promise<{ url: string; caBundle: string }> {
  const crd = await getJson('crd', 'clusters.cluster.x-k8s.io');
  assert.equal(crd.spec.conversion.strategy, 'Webhook');
  return crd.spec.conversion.webhook.clientConfig as { url: string; caBundle: string };
}

test("the kinds a capt cluster is not made of are converted by Cluster API's own functions: its v1beta1 ClusterClass stored as v1beta2, read back as written; v1alpha1 of runtime and IPAM served", async () => {
  const file = join(clusterApiE2eData(), 'infrastructure-docker/main/clusterclass-quick-start-runtimesdk-v1beta1.yaml');
  const [written] = parseAllDocuments(substituteVariables(await readFile(file, 'utf8'), {}).text)
    .map((d) => d.toJS() as Json)
    .filter((d) => d.kind === 'ClusterClass');
  assert.equal(written!.apiVersion, 'cluster.x-k8s.io/v1beta1');
  const applied = await kube(JSON.stringify(written), 'apply', '-f', '-');
  assert.equal(applied.code, 0, applied.stderr);
  const name = written!.metadata.name as string;
  const stored = await getJson('clusterclasses.v1beta2.cluster.x-k8s.io', name);
  assert.deepEqual(stored.spec.controlPlane.templateRef, {
    apiVersion: 'controlplane.cluster.x-k8s.io/v1beta1',
    kind: 'KubeadmControlPlaneTemplate',
    name: 'quick-start-control-plane',
  });
  assert.deepEqual(
    stored.spec.patches.map((p: Json) => [p.name, Boolean(p.external)]),
    written!.spec.patches.map((p: Json) => [p.name, true]),
  );
  // Read back in v1beta1 as Cluster API's own webhook gives it: the same class (its references also name their
  // namespace), with what v1beta1 cannot hold kept in Cluster API's conversion-data annotation.
  const readBack = await getJson('clusterclasses.v1beta1.cluster.x-k8s.io', name);
  const refOf = (ref: Json) => [ref.apiVersion, ref.kind, ref.name];
  assert.deepEqual(refOf(readBack.spec.controlPlane.ref), refOf(written!.spec.controlPlane.ref));
  assert.deepEqual(refOf(readBack.spec.infrastructure.ref), refOf(written!.spec.infrastructure.ref));
  assert.deepEqual(
    readBack.spec.workers.machineDeployments.map((md: Json) => md.class),
    written!.spec.workers.machineDeployments.map((md: Json) => md.class),
  );
  assert.deepEqual(readBack.spec.patches, written!.spec.patches);
  assert.ok(readBack.metadata.annotations?.[conversionDataAnnotation], "Cluster API's conversion data is kept");
  for (const resource of [
    'extensionconfigs.v1alpha1.runtime.cluster.x-k8s.io',
    'ipaddressclaims.v1alpha1.ipam.cluster.x-k8s.io',
  ]) {
    const listed = await kube(undefined, 'get', resource, '-A');
    assert.equal(listed.code, 0, `${resource}: ${listed.stderr}`);
  }
  const deleted = await kube(undefined, 'delete', 'clusterclass', name);
  assert.equal(deleted.code, 0, deleted.stderr);
});

test('a malformed ConversionReview posted to the webhook gets a 400 saying why; an object it cannot convert fails the review', async () => {
  const { url, caBundle } = await conversionClientConfig();
  assert.match(url, /^https:\/\/127\.0\.0\.1:\d+\/convert$/);
  const post = async (body: string) => {
    const answer = await postToWebhook({ url, caBundle }, body);
    return { status: answer.status, body: JSON.parse(answer.body) as Json };
  };
  const notJson = await post('{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": ');
  assert.equal(notJson.status, 400);
  assert.match(notJson.body.message, /^the body is not JSON: /);
  assert.deepEqual(await post('{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"}'), {
    status: 400,
    body: { message: 'the ConversionReview has no request' },
  });
  const review = (objects: unknown) =>
    JSON.stringify({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'ConversionReview',
      request: { uid: 'u1', desiredAPIVersion: 'cluster.x-k8s.io/v1beta1', objects },
    });
  assert.deepEqual(await post(review('all')), {
    status: 400,
    body: { message: 'request.objects must be a list of objects' },
  });
  const pod = { apiVersion: 'cluster.x-k8s.io/v1beta2', kind: 'Widget', metadata: { name: 'p', namespace: 'a' } };
  assert.deepEqual(await post(review([pod])), {
    status: 200,
    body: {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'ConversionReview',
      response: {
        uid: 'u1',
        convertedObjects: [],
        result: {
          status: 'Failure',
          message: 'request.objects[0] (Widget a/p): capt does not convert "Widget" of cluster.x-k8s.io',
        },
      },
    },
  });
  // A kind handed to Cluster API's converters: what they refuse fails the review with their words.
  const pool = { apiVersion: 'cluster.x-k8s.io/v1beta2', kind: 'MachinePool', metadata: { name: 'p', namespace: 'a' } };
  const refused = await post(
    JSON.stringify({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'ConversionReview',
      request: { uid: 'u2', desiredAPIVersion: 'cluster.x-k8s.io/v1alpha9', objects: [pool] },
    }),
  );
  assert.equal(refused.body.response.result.status, 'Failure');
  assert.match(refused.body.response.result.message, /v1alpha9 is not a version of MachinePool/);
  // The webhook goes on converting.
  assert.equal((await getJson('clusters.v1beta1.cluster.x-k8s.io', 'oldapi')).apiVersion, 'cluster.x-k8s.io/v1beta1');
});

test('while no bridge runs, v1beta2 reads work and v1beta1 reads fail; capt dev start serves v1beta1 again and keeps the conversion', async () => {
  const status = await stack.capt('dev', 'status');
  const pid = Number(/^bridge:\s+running \(pid (\d+)\)$/m.exec(status.stdout)?.[1]);
  assert.ok(pid > 0, status.stdout);
  const { url } = await conversionClientConfig();
  process.kill(pid, 'SIGTERM');
  await until('the bridge to stop', async () =>
    /^bridge:\s+stopped$/m.test((await stack.capt('dev', 'status')).stdout),
  );
  assert.equal((await getJson('clusters.v1beta2.cluster.x-k8s.io', 'oldapi')).spec.paused, true);
  const old = await kube(undefined, 'get', 'clusters.v1beta1.cluster.x-k8s.io', 'oldapi', '-o', 'json');
  assert.notEqual(old.code, 0);
  assert.match(old.stderr, /conversion webhook for cluster\.x-k8s\.io\/v1beta2, Kind=Cluster failed/);

  const restarted = await stack.capt('dev', 'start');
  assert.equal(restarted.code, 0, restarted.stderr);
  assert.match(restarted.stdout + restarted.stderr, /\(0 written\)/, 'the CRDs are not written again');
  // The bridge registers its new webhook (new port and authority) as it starts.
  const served = await until('v1beta1 served again', async () => {
    const got = await kube(undefined, 'get', 'clusters.v1beta1.cluster.x-k8s.io', 'oldapi', '-o', 'json');
    return got.code === 0 ? (JSON.parse(got.stdout) as Json) : undefined;
  });
  assert.equal(served.spec.paused, true);
  assert.notEqual((await conversionClientConfig()).url, url, 'the new bridge registered its own');
});
