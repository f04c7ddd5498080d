import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { test } from 'node:test';
import pino from 'pino';
import { parseAllDocuments } from 'yaml';
import { substituteVariables } from '../../src/api/variables';
import {
  admissionResponse,
  MalformedReviewError,
  parseAdmissionReview,
  type AdmissionRequest,
} from '../../src/bridge/admission-review';
import { checkAdmission, needsReview } from '../../src/bridge/admission-rules';
import { maxReviewBytes, startAdmissionWebhook } from '../../src/bridge/admission-webhook';
import { ephemeralWebhookServing } from '../../src/pki/webhook-serving';
import type { ObjectsByKind } from '../../src/bridge/cluster-documents';
import type { ApiObject, ManagedKind } from '../../src/bridge/management-client';
import { validatePath, validatingRoute } from '../../src/bridge/validating-route';
import { validatingWebhookConfiguration } from '../../src/bridge/webhook-registration';
import { withDefaults } from '../../src/defaulting/defaults';
import type { PlainObject } from '../../src/defaulting/plain-object';
import { clusterChangeProblems } from '../../src/spec-rules/cluster-rules';
import type { ClusterModel } from '../../src/api/model';
import { formatSpecProblems } from '../../src/spec-rules/spec-problem';

/** The quickstart's objects as the management API lists them. */
function quickstart(): ObjectsByKind {
  const { text } = substituteVariables(readFileSync(join(__dirname, '../../../examples/quickstart.yaml'), 'utf8'), {
    CLUSTER_NAME: 'one',
  });
  const objects: ObjectsByKind = {};
  for (const doc of parseAllDocuments(text)) {
    const o = doc.toJSON() as ApiObject;
    o.metadata = { ...o.metadata, uid: `uid-${o.metadata.name}`, generation: 1 };
    (objects[o.kind as ManagedKind] ??= []).push(o);
  }
  return objects;
}

const one = (objects: ObjectsByKind, kind: ManagedKind) => structuredClone(objects[kind]![0]!);
const create = (object: ApiObject): AdmissionRequest => ({ uid: 'u1', operation: 'CREATE', object });
const update = (oldObject: ApiObject, object: ApiObject): AdmissionRequest => ({
  uid: 'u2',
  operation: 'UPDATE',
  object,
  oldObject,
});

test('an AdmissionReview that is not one is refused with what is wrong; a good one gives its request', () => {
  const malformed = (body: string, message: RegExp) =>
    assert.throws(
      () => parseAdmissionReview(body),
      (err: Error) => err instanceof MalformedReviewError && message.test(err.message),
    );
  malformed('{"apiVersion":', /^the body is not JSON: /);
  malformed('[]', /^expected an AdmissionReview of admission\.k8s\.io\/v1$/);
  malformed('{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview"}', /^expected an AdmissionReview/);
  const review = (request: unknown) =>
    JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request });
  malformed(review(undefined), /^the AdmissionReview has no request$/);
  malformed(review({ operation: 'CREATE' }), /^request\.uid is missing$/);
  malformed(
    review({ uid: 'u', operation: 'PATCH' }),
    /^request\.operation must be one of CREATE, UPDATE, DELETE, CONNECT$/,
  );
  malformed(review({ uid: 'u', operation: 'CREATE' }), /^a CREATE request carries its object in request\.object$/);
  malformed(
    review({ uid: 'u', operation: 'CREATE', object: { kind: 'Cluster', metadata: { name: 'x' } } }),
    /^request\.object must be an object with apiVersion, kind, metadata\.name and namespace$/,
  );
  const cluster = one(quickstart(), 'Cluster');
  malformed(
    review({
      uid: 'u',
      operation: 'CREATE',
      object: { ...cluster, metadata: { name: 'x', namespace: '../kube-system' } },
    }),
    /^request\.object\.metadata\.namespace must be a lowercase DNS name/,
  );
  assert.deepEqual(parseAdmissionReview(review({ uid: 'u', operation: 'DELETE', oldObject: cluster })), {
    uid: 'u',
    operation: 'DELETE',
    object: undefined,
    oldObject: cluster,
  });
});

test('the response allows, or refuses with 422 and capt’s message', () => {
  assert.deepEqual(admissionResponse('u', undefined), {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    response: { uid: 'u', allowed: true },
  });
  assert.deepEqual(admissionResponse('u', 'why'), {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    response: { uid: 'u', allowed: false, status: { code: 422, reason: 'Invalid', message: 'why' } },
  });
});

test('deletions, objects on their way out, machines a controller made and writes that leave the desired state alone need no review', () => {
  const objects = quickstart();
  const cluster = one(objects, 'Cluster');
  assert.equal(needsReview(create(cluster)), true);
  assert.equal(needsReview({ uid: 'u', operation: 'DELETE', oldObject: cluster }), false);
  const bookkept = structuredClone(cluster);
  bookkept.metadata.finalizers = ['cluster.cluster.x-k8s.io'];
  bookkept.metadata.labels = { 'cluster.x-k8s.io/cluster-name': 'one' };
  bookkept.metadata.annotations = { 'capt.cluster.x-k8s.io/applied-manifest': 'abc' };
  bookkept.status = { phase: 'Provisioned' };
  assert.equal(needsReview(update(cluster, bookkept)), false, "the bridge's own writes");
  const paused = structuredClone(cluster);
  paused.spec = { ...paused.spec, paused: true };
  assert.equal(needsReview(update(cluster, paused)), true);
  const deleting = structuredClone(paused);
  deleting.metadata.deletionTimestamp = '2026-01-01T00:00:00Z';
  assert.equal(needsReview(update(cluster, deleting)), false);
  const machineSet = { ...structuredClone(cluster), kind: 'MachineSet' };
  assert.equal(needsReview(create(machineSet)), false, 'not a kind of a manifest');
  const made = { ...structuredClone(cluster), kind: 'Machine' };
  made.metadata.ownerReferences = [{ apiVersion: 'cluster.x-k8s.io/v1beta2', kind: 'MachineSet', name: 's', uid: 'u' }];
  assert.equal(needsReview(create(made)), false, 'a Machine of a MachineSet');
});

test("an update that only fills in Cluster API's defaults (an object stored before the defaulting webhook answered) needs no review", () => {
  const stored = one(quickstart(), 'KubeadmControlPlane');
  delete stored.spec!.rollout;
  const owned = withDefaults(stored as unknown as PlainObject) as unknown as ApiObject;
  owned.metadata.ownerReferences = [{ apiVersion: 'cluster.x-k8s.io/v1beta2', kind: 'Cluster', name: 'one', uid: 'u' }];
  assert.notDeepEqual(owned.spec, stored.spec, 'the rollout strategy defaulted');
  assert.equal(needsReview(update(stored, owned)), false, "the bridge's owner reference, defaulted");
  const changed = structuredClone(owned);
  changed.spec!.replicas = 3;
  assert.equal(needsReview(update(stored, changed)), true, 'a change besides the defaults');
});

test("a field capt refuses, in a complete cluster, is refused with the bridge's located message", () => {
  const objects = quickstart();
  const kcp = one(objects, 'KubeadmControlPlane');
  (kcp.spec as { kubeadmConfigSpec: Record<string, unknown> }).kubeadmConfigSpec.users = [{ name: 'admin' }];
  assert.equal(
    checkAdmission(create(kcp), objects).refusal,
    "management API, Cluster default/one (document 3) KubeadmControlPlane/one-control-plane at spec.kubeadmConfigSpec.users: users are not created by capt's providers: create them in preKubeadmCommands (useradd) or remove the field",
  );
  const md = one(objects, 'MachineDeployment');
  (md.spec as { replicas: number }).replicas = 10_001;
  assert.match(
    checkAdmission(update(one(objects, 'MachineDeployment'), md), objects).refusal ?? '',
    /^management API, Cluster default\/one \(document \d\) MachineDeployment\/one-md-0 at spec\.replicas: /,
  );
});

test("kubectl annotate with capt's repave and maintenance-window annotations is checked as capt apply checks them", () => {
  const objects = quickstart();
  const md = one(objects, 'MachineDeployment');
  md.metadata.annotations = { ...md.metadata.annotations, 'capt.cluster.x-k8s.io/machine-max-age': '10s' };
  assert.equal(
    checkAdmission(update(one(objects, 'MachineDeployment'), md), objects).refusal,
    'management API, Cluster default/one (document 5) MachineDeployment/one-md-0 at metadata.annotations[capt.cluster.x-k8s.io/machine-max-age]: a machine max age of 10s would replace machines faster than they boot and serve\n  hint: use 30s or more (e.g. 720h), or remove the annotation',
  );
  md.metadata.annotations['capt.cluster.x-k8s.io/machine-max-age'] = '720h';
  assert.equal(checkAdmission(update(one(objects, 'MachineDeployment'), md), objects).refusal, undefined);
  // Held for a maintenance window its Cluster does not declare: refused; declared (a window of bad hours): refused there.
  md.metadata.annotations['capt.cluster.x-k8s.io/rollout-in-maintenance-window'] = 'true';
  assert.match(
    checkAdmission(update(one(objects, 'MachineDeployment'), md), objects).refusal ?? '',
    /MachineDeployment\/one-md-0 at metadata\.annotations\[capt\.cluster\.x-k8s\.io\/rollout-in-maintenance-window\]: Cluster one has no maintenance window to wait for/,
  );
  const cluster = one(objects, 'Cluster');
  cluster.metadata.annotations = { 'capt.cluster.x-k8s.io/maintenance-window': 'Sat 2am-4am UTC' };
  assert.match(
    checkAdmission(update(one(objects, 'Cluster'), cluster), objects).refusal ?? '',
    /Cluster\/one at metadata\.annotations\[capt\.cluster\.x-k8s\.io\/maintenance-window\]: "2am-4am" is not a span of hours/,
  );
});

test("kubectl annotate with capt's in-place opt-out reaches the model; a value it does not take is refused where it is written", () => {
  const objects = quickstart();
  const md = one(objects, 'MachineDeployment');
  md.metadata.annotations = { ...md.metadata.annotations, 'capt.cluster.x-k8s.io/in-place-updates': 'never' };
  assert.match(
    checkAdmission(update(one(objects, 'MachineDeployment'), md), objects).refusal ?? '',
    /MachineDeployment\/one-md-0 at metadata\.annotations\.capt\.cluster\.x-k8s\.io\/in-place-updates: "never" is not a value it takes/,
  );
  md.metadata.annotations['capt.cluster.x-k8s.io/in-place-updates'] = 'false';
  const admitted = checkAdmission(update(one(objects, 'MachineDeployment'), md), objects);
  assert.equal(admitted.refusal, undefined);
  assert.equal(admitted.clusters[0]!.next.machineDeployments[0]!.inPlaceUpdates, false);
});

test("a MachineHealthCheck of the machines' own conditions is admitted into the model; one of a condition capt never sets is refused where it is written", () => {
  const objects = quickstart();
  const check = (type: string): ApiObject => ({
    apiVersion: 'cluster.x-k8s.io/v1beta2',
    kind: 'MachineHealthCheck',
    metadata: { name: 'one-md-0', namespace: 'default', uid: 'uid-mhc', generation: 1 },
    spec: {
      clusterName: 'one',
      selector: { matchLabels: { 'cluster.x-k8s.io/deployment-name': 'one-md-0' } },
      checks: { unhealthyMachineConditions: [{ type, status: 'Unknown', timeoutSeconds: 300 }] },
    },
  });
  const admitted = checkAdmission(create(check('NodeReady')), objects);
  assert.equal(admitted.refusal, undefined);
  assert.deepEqual(admitted.clusters[0]!.next.machineDeployments[0]!.healthCheck?.unhealthyMachineConditions, [
    { type: 'NodeReady', status: 'Unknown', timeoutSeconds: 300 },
  ]);
  assert.match(
    checkAdmission(create(check('KernelDeadlock')), objects).refusal ?? '',
    /^management API, Cluster default\/one \(document \d\) MachineHealthCheck\/one-md-0 at spec\.checks\.unhealthyMachineConditions\[0\]\.type: capt sets no KernelDeadlock condition on a Machine \(it sets Ready, /,
  );
});

test("a Cluster with spec.topology is checked with its class and templates: let through until they arrive, then loaded with the names of what it makes, and refused with Cluster API's words", () => {
  const { text } = substituteVariables(
    readFileSync(join(__dirname, '../../../examples/clusterclass-quickstart.yaml'), 'utf8'),
    { CLUSTER_NAME: 'tq' },
  );
  const objects: ObjectsByKind = {};
  for (const doc of parseAllDocuments(text)) {
    const o = doc.toJSON() as ApiObject;
    (objects[o.kind as ManagedKind] ??= []).push(o);
  }
  const cluster = one(objects, 'Cluster');
  const clusterClass = one(objects, 'ClusterClass');
  // kubectl apply -f creates them one by one: a class before its Clusters, a Cluster before its class.
  for (const alone of [clusterClass, cluster]) assert.deepEqual(checkAdmission(create(alone), {}).refusal, undefined);
  const complete = checkAdmission(create(cluster), objects);
  assert.equal(complete.refusal, undefined);
  assert.match(complete.clusters[0]!.next.controlPlane.name, /^tq-\w{5}$/);
  assert.equal(complete.clusters[0]!.next.topology?.class, 'quick-start');
  // A change to the class is checked for every Cluster of it.
  const badClass = structuredClone(clusterClass);
  (badClass.spec as { workers: { machineDeployments: { class: string }[] } }).workers.machineDeployments[0]!.class =
    'BAD CLASS';
  assert.ok(checkAdmission(create(badClass), objects).refusal);
  // A class many Clusters use: they are loaded within a budget, the first always, the rest left for the bridge.
  const many: ObjectsByKind = {
    ...objects,
    Cluster: ['tq', 'tq2', 'tq3'].map((name) => ({
      ...structuredClone(cluster),
      metadata: { ...cluster.metadata, name },
    })),
  };
  const classChange = structuredClone(clusterClass);
  classChange.metadata.annotations = { 'example.com/changed': 'yes' };
  // A budget no loaded host outruns (the default 2 s held two of three renders beside other test files).
  const all = checkAdmission(update(clusterClass, classChange), many, undefined, 600_000);
  assert.deepEqual([all.clusters.length, all.unchecked], [3, undefined]);
  const budgeted = checkAdmission(update(clusterClass, classChange), many, undefined, 0);
  assert.deepEqual([budgeted.clusters.length, budgeted.unchecked], [1, ['default/tq2', 'default/tq3']]);
  const downgrade = structuredClone(cluster);
  (downgrade.spec as { topology: { version: string } }).topology.version = 'v1.1.0';
  const [{ previous, next }] = checkAdmission(update(cluster, downgrade), objects).clusters as [
    { previous?: ClusterModel; next: ClusterModel },
  ];
  assert.match(
    formatSpecProblems(clusterChangeProblems(previous!, next)),
    /^Cluster default\/tq at spec\.topology\.version: version cannot be decreased from "1\.36\.3" to "1\.1\.0"/,
  );
  // What the bridge makes of a topology is not desired state: it is not reviewed (nor sent: matchConditions).
  const made = one(quickstart(), 'KubeadmControlPlane');
  made.metadata.labels = { 'topology.cluster.x-k8s.io/owned': '' };
  assert.equal(needsReview(create(made)), false);
  assert.equal(needsReview(create(one(quickstart(), 'KubeadmControlPlane'))), true);
});

test('objects arriving one by one are let through until their cluster is complete; one of no Cluster is checked alone', () => {
  const objects = quickstart();
  // kubectl apply -f creates the Cluster first: its control plane and infrastructure are not there yet.
  assert.deepEqual(checkAdmission(create(one(objects, 'Cluster')), {}), { clusters: [] });
  // Complete, it loads: the model goes on to the change rules.
  const complete = checkAdmission(create(one(objects, 'Cluster')), objects);
  assert.equal(complete.refusal, undefined);
  assert.equal(complete.clusters[0]!.next.controlPlane.name, 'one-control-plane');
  // A template before its Cluster: its own fields are checked.
  const template = one(objects, 'KubeadmConfigTemplate');
  (template.spec as { template: { spec: Record<string, unknown> } }).template.spec.users = [{ name: 'admin' }];
  assert.match(
    checkAdmission(create(template), {}).refusal ?? '',
    /^management API, KubeadmConfigTemplate default\/one-md-0 \(document 1\) KubeadmConfigTemplate\/one-md-0 at spec\.template\.spec\.users: users are not created/,
  );
  // A Cluster referencing a kind capt does not take is refused although its control plane is missing.
  const wrong = one(objects, 'Cluster');
  (wrong.spec as { infrastructureRef: { kind: string } }).infrastructureRef.kind = 'DockerCluster';
  assert.match(
    checkAdmission(create(wrong), {}).refusal ?? '',
    /Cluster\/one at spec\.infrastructureRef\.kind: DockerCluster cannot be used here/,
  );
});

test('an update gives the model before and after, so a downgrade is refused with the change rules', () => {
  // Without workers, which a control plane older than theirs would refuse first.
  const { MachineDeployment: _md, ...objects } = quickstart();
  const kcp = one(objects, 'KubeadmControlPlane');
  const older = structuredClone(kcp);
  (older.spec as { version: string }).version = 'v1.35.4';
  const { refusal, clusters } = checkAdmission(update(kcp, older), objects);
  assert.equal(refusal, undefined);
  const { previous, next } = clusters[0]!;
  assert.equal(previous?.controlPlane.version, 'v1.36.3');
  assert.equal(next.controlPlane.version, 'v1.35.4');
  assert.equal(
    formatSpecProblems(clusterChangeProblems(previous!, next)),
    'KubeadmControlPlane default/one-control-plane at spec.version: cannot update Kubernetes version from v1.36.3 to v1.35.4: downgrades are not supported; `capt rollout undo` returns to an earlier revision',
  );
});

test('the configuration asks about creates and updates of every kind of a manifest and of ClusterResourceSets, Ignore on failure, within 5 s', () => {
  const config = validatingWebhookConfiguration('https://127.0.0.1:9443/validate', 'PEM');
  const [webhook] = (config as { webhooks: Record<string, unknown>[] }).webhooks;
  assert.deepEqual(webhook!.clientConfig, { url: 'https://127.0.0.1:9443/validate', caBundle: 'UEVN' });
  assert.deepEqual(webhook!.rules, [
    {
      apiGroups: ['cluster.x-k8s.io'],
      apiVersions: ['v1beta2'],
      operations: ['CREATE', 'UPDATE'],
      resources: ['clusters', 'machinedeployments', 'machinehealthchecks', 'machines', 'clusterclasses'],
      scope: 'Namespaced',
    },
    {
      apiGroups: ['controlplane.cluster.x-k8s.io'],
      apiVersions: ['v1beta2'],
      operations: ['CREATE', 'UPDATE'],
      resources: ['kubeadmcontrolplanes', 'kubeadmcontrolplanetemplates'],
      scope: 'Namespaced',
    },
    {
      apiGroups: ['bootstrap.cluster.x-k8s.io'],
      apiVersions: ['v1beta2'],
      operations: ['CREATE', 'UPDATE'],
      resources: ['kubeadmconfigs', 'kubeadmconfigtemplates'],
      scope: 'Namespaced',
    },
    {
      apiGroups: ['infrastructure.cluster.x-k8s.io'],
      apiVersions: ['v1beta2'],
      operations: ['CREATE', 'UPDATE'],
      resources: ['localclusters', 'localmachinetemplates', 'localmachines', 'localclustertemplates'],
      scope: 'Namespaced',
    },
    // ClusterResourceSets, checked alone (resourceSetResources).
    {
      apiGroups: ['addons.cluster.x-k8s.io'],
      apiVersions: ['v1beta2'],
      operations: ['CREATE', 'UPDATE'],
      resources: ['clusterresourcesets'],
      scope: 'Namespaced',
    },
  ]);
  assert.equal(webhook!.failurePolicy, 'Ignore');
  assert.equal(webhook!.timeoutSeconds, 5);
  assert.equal(webhook!.sideEffects, 'None');
});

test('the webhook answers over HTTPS; bad requests get 400, 404, 405 or 413 and it keeps serving', async () => {
  const webhook = await startAdmissionWebhook({
    host: '127.0.0.1',
    port: 0,
    serving: await ephemeralWebhookServing('127.0.0.1'),
    routes: {
      [validatePath]: validatingRoute(
        async (r) => (r.object?.metadata.name === 'bad' ? 'refused: bad' : undefined),
        pino({ level: 'silent' }),
      ),
    },
    log: pino({ level: 'silent' }),
  });
  const post = (body: string | Buffer, opts: { method?: string; path?: string } = {}) =>
    new Promise<{ status: number; json: Record<string, unknown> }>((resolve, reject) => {
      const url = new URL(webhook.url);
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          path: opts.path ?? validatePath,
          method: opts.method ?? 'POST',
          ca: webhook.caBundle,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({
              status: res.statusCode!,
              json: JSON.parse(Buffer.concat(chunks).toString()) as Record<string, unknown>,
            }),
          );
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const review = (name: string) =>
    JSON.stringify({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: 'u',
        operation: 'CREATE',
        object: { ...one(quickstart(), 'Cluster'), metadata: { name, namespace: 'default' } },
      },
    });
  try {
    const malformed = await post('{"apiVersion":');
    assert.equal(malformed.status, 400);
    assert.match(String(malformed.json.message), /^the body is not JSON: /);
    assert.deepEqual(await post(Buffer.alloc(maxReviewBytes + 1, 0x20)), {
      status: 413,
      json: { message: `an AdmissionReview is at most ${maxReviewBytes} bytes` },
    });
    assert.equal((await post('', { method: 'GET' })).status, 405);
    assert.equal((await post(review('bad'), { path: '/elsewhere' })).status, 404);
    assert.deepEqual((await post(review('bad'))).json.response, {
      uid: 'u',
      allowed: false,
      status: { code: 422, reason: 'Invalid', message: 'refused: bad' },
    });
    assert.deepEqual((await post(review('good'))).json.response, { uid: 'u', allowed: true });
    assert.equal(webhook.answered(validatePath), 2);
  } finally {
    await webhook.close();
  }
});
