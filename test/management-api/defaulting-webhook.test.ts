import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { parseAllDocuments, stringify } from 'yaml';
import { substituteVariables } from '../../src/api/variables';
import { appliedManifestAnnotation } from '../../src/bridge/bridge';
import { defaultingConfigurationName } from '../../src/bridge/defaulting-registration';
import { webhookName } from '../../src/bridge/webhook-registration';
import { availableKubernetesVersions } from '../../src/tools';
import { startDevStack, type DevStackUnderTest } from '../fixtures/dev-stack';
import { until } from '../fixtures/until';

/**
 * capt's defaulting webhook, as `capt dev start` serves and registers it (in the bridge): objects written as
 * Cluster API's users write them, relying on its defaults, are stored defaulted, and capt takes them. The
 * cluster is paused: no machine is made.
 */

const version = availableKubernetesVersions().at(-1)!;
type Doc = { apiVersion: string; kind: string; metadata: Record<string, unknown>; spec: Record<string, unknown> };
let stack: DevStackUnderTest;

const kube = (input: string | undefined, ...args: string[]) => stack.kubectl(input, ...args);
const getJson = async (...args: string[]) => {
  const got = await kube(undefined, 'get', ...args, '-o', 'json');
  assert.equal(got.code, 0, got.stderr);
  return JSON.parse(got.stdout) as Doc;
};

/**
 * The quickstart, paused, as a user relying on Cluster API's defaults writes it: its MachineDeployment without
 * selector, replicas, rollout or template labels, its worker version without the "v", its control plane
 * without replicas; and a MachineHealthCheck without checks.
 */
async function bareManifest(name: string): Promise<Doc[]> {
  const { text } = substituteVariables(await readFile(join(__dirname, '../../../examples/quickstart.yaml'), 'utf8'), {
    CLUSTER_NAME: name,
    KUBERNETES_VERSION: version,
  });
  const docs = parseAllDocuments(text).map((d) => d.toJSON() as Doc);
  for (const { kind, spec } of docs) {
    if (kind === 'Cluster') spec.paused = true;
    if (kind === 'KubeadmControlPlane') delete spec.replicas;
    if (kind === 'MachineDeployment') {
      for (const key of ['selector', 'replicas', 'rollout']) delete spec[key];
      const template = spec.template as { metadata?: object; spec: { version: string } };
      delete template.metadata;
      template.spec.version = version.slice(1);
    }
  }
  docs.push({
    apiVersion: 'cluster.x-k8s.io/v1beta2',
    kind: 'MachineHealthCheck',
    metadata: { name: `${name}-md-0`, namespace: 'default' },
    spec: { clusterName: name, selector: { matchLabels: { 'cluster.x-k8s.io/deployment-name': `${name}-md-0` } } },
  });
  return docs;
}
const yaml = (docs: Doc[]) => docs.map((d) => stringify(d)).join('---\n');

before(async () => {
  stack = await startDevStack();
  console.log(`# capt dev start (with the bridge's admission webhooks registered): ${stack.started.ms} ms`);
});

after(() => stack.remove());

test("kubectl apply of objects relying on Cluster API's defaults stores them defaulted, and the bridge takes the cluster", async () => {
  const config = await getJson('mutatingwebhookconfiguration', defaultingConfigurationName);
  assert.match(
    (config as unknown as { webhooks: { clientConfig: { url: string } }[] }).webhooks[0]!.clientConfig.url,
    /^https:\/\/127\.0\.0\.1:\d+\/mutate$/,
  );
  const applied = await kube(yaml(await bareManifest('bare')), 'apply', '-f', '-');
  assert.equal(applied.code, 0, applied.stderr);

  const md = await getJson('machinedeployment', 'bare-md-0');
  assert.equal(md.metadata.labels?.['cluster.x-k8s.io/cluster-name' as never], 'bare');
  const own = { 'cluster.x-k8s.io/cluster-name': 'bare', 'cluster.x-k8s.io/deployment-name': 'bare-md-0' };
  assert.deepEqual(md.spec.selector, { matchLabels: own });
  assert.equal(md.spec.replicas, 1);
  assert.deepEqual(md.spec.rollout, {
    strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
  });
  const template = md.spec.template as { metadata: { labels: object }; spec: { version: string } };
  assert.deepEqual(template.metadata.labels, own);
  assert.equal(template.spec.version, version, 'the "v" added, so capt takes it');

  const mhc = await getJson('machinehealthcheck', 'bare-md-0');
  assert.equal(mhc.metadata.labels?.['cluster.x-k8s.io/cluster-name' as never], 'bare');
  assert.deepEqual(mhc.spec.checks, { nodeStartupTimeoutSeconds: 600 });

  const kcp = await getJson('kubeadmcontrolplane', 'bare-control-plane');
  assert.equal(kcp.spec.replicas, 1);
  assert.deepEqual(kcp.spec.rollout, { strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1 } } });

  // The bridge loads the defaulted objects as `capt apply` loads a file, and hands them to the workflow.
  await until('the bridge to apply Cluster bare', async () => {
    const cluster = await getJson('cluster', 'bare');
    const conditions = (cluster as unknown as { status?: { conditions?: { type: string; message?: string }[] } }).status
      ?.conditions;
    const refused = conditions?.find((c) => c.type === 'Accepted');
    assert.equal(refused, undefined, `refused: ${refused?.message}`);
    return Boolean(cluster.metadata.annotations?.[appliedManifestAnnotation as never]);
  });
});

test('an object with the defaults of its own keeps them, and the validating webhook still refuses a bad one after defaulting', async () => {
  const [md] = (await bareManifest('own')).filter((d) => d.kind === 'MachineDeployment');
  md!.spec.replicas = 3;
  md!.spec.rollout = { strategy: { type: 'OnDelete' } };
  const kept = await kube(yaml([md!]), 'apply', '--dry-run=server', '-o', 'json', '-f', '-');
  assert.equal(kept.code, 0, kept.stderr);
  const stored = JSON.parse(kept.stdout) as Doc;
  assert.equal(stored.spec.replicas, 3);
  assert.deepEqual(stored.spec.rollout, { strategy: { type: 'OnDelete' } }, 'no rollingUpdate under OnDelete');

  // The bare cluster is complete: its MachineDeployment, defaulted, is checked whole by the validating webhook.
  const [bare] = (await bareManifest('bare')).filter((d) => d.kind === 'MachineDeployment');
  bare!.spec.replicas = 5001;
  const refused = await kube(yaml([bare!]), 'apply', '-f', '-');
  assert.notEqual(refused.code, 0);
  assert.ok(
    refused.stderr.includes(
      `admission webhook "${webhookName}" denied the request: management API, Cluster default/bare (document 5) MachineDeployment/bare-md-0 at spec.replicas: 5001 replicas is more than`,
    ),
    refused.stderr,
  );
  assert.equal((await getJson('machinedeployment', 'bare-md-0')).spec.replicas, 1, 'unchanged');
});

test("while no bridge answers (failurePolicy Ignore), a MachineDeployment without its selector is refused by the CRD's schema, never stored wrong", async () => {
  const status = await stack.capt('dev', 'status');
  const pid = Number(/^bridge:\s+running \(pid (\d+)\)$/m.exec(status.stdout)?.[1]);
  assert.ok(pid > 0, status.stdout);
  process.kill(pid, 'SIGTERM');
  await until('the bridge to stop', async () =>
    /^bridge:\s+stopped$/m.test((await stack.capt('dev', 'status')).stdout),
  );
  const [md] = (await bareManifest('later')).filter((d) => d.kind === 'MachineDeployment');
  const applied = await kube(yaml([md!]), 'apply', '-f', '-');
  assert.notEqual(applied.code, 0);
  assert.match(applied.stderr, /spec\.selector: Required value/);
});
