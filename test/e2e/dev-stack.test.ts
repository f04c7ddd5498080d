import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { LocalProvider } from '../../providers/local/local-provider';
import { codecKeysEnv } from '../../src/codec/codec-keys';
import { availableKubernetesVersions, kubectlFor } from '../../src/tools';
import { deletePostgresTopology, postgresDataHome } from '../../src/dev/postgres-topology';
import { maxServicePort } from '../../src/dev/temporal-server-config';
import { freePort, freePortBetween } from '../../src/util/free-port';
import { runProgram } from '../fixtures/capt-cli';
import { listening, processesMentioning } from '../fixtures/leaks';
import { until } from '../fixtures/until';

const run = promisify(execFile);
const cli = join(__dirname, '../../src/cli/main.js');
let env: Record<string, string>;
let home: string;

async function capt(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [cli, ...args], { env: { ...process.env, ...env } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

before(async () => {
  home = await mkdtemp(join(tmpdir(), 'capt-home-'));
  // This process computes the capt home's paths (postgresDataHome) as the CLI does.
  process.env.CAPT_HOME = home;
  // The production topology's server takes ports up to 32767 only.
  env = {
    CAPT_HOME: home,
    CAPT_DEV_PORT: String(await freePortBetween(10_000, maxServicePort)),
    CAPT_DEV_UI_PORT: String(await freePort()),
    CAPT_DEV_CODEC_PORT: String(await freePort()),
    CAPT_DEV_API_PORT: String(await freePort()),
    CAPT_DEV_METRICS_PORT: String(await freePort()),
  };
  // A new user's host: no key anywhere, so `capt dev start` makes one.
  delete process.env[codecKeysEnv];
  delete process.env.CAPT_CODEC_KEY_FILE;
});
after(async () => {
  await capt('dev', 'stop');
  // A test that failed midway leaves its cluster's machines running (they outlive the stack, by design): removed here.
  await new LocalProvider().deleteCluster('default', 'kept');
  await deletePostgresTopology(join(home, 'dev'));
  await rm(home, { recursive: true, force: true });
});

/** The Web UI's settings name the codec server, and the codec server answers the UI's preflight. */
async function assertUiUsesCodecServer(): Promise<void> {
  const codec = `http://127.0.0.1:${env.CAPT_DEV_CODEC_PORT}`;
  const settings = (await (await fetch(`http://127.0.0.1:${env.CAPT_DEV_UI_PORT}/api/v1/settings`)).json()) as {
    Codec: { Endpoint: string };
  };
  assert.equal(settings.Codec.Endpoint, codec);
  const origin = `http://localhost:${env.CAPT_DEV_UI_PORT}`;
  const preflight = await fetch(`${codec}/decode`, {
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'content-type,x-namespace',
    },
  });
  assert.equal(preflight.status, 204);
  assert.equal(preflight.headers.get('access-control-allow-origin'), origin);
}

test('capt dev start|status|stop runs the Temporal dev server with its Web UI, the codec server and a worker in the background, and stops them', async () => {
  // A start that fails partway (Temporal's port taken) stops what it had started: the codec server, the management API.
  const squatter = createServer();
  await new Promise<void>((resolve) => squatter.listen(Number(env.CAPT_DEV_PORT), '127.0.0.1', resolve));
  const failed = await capt('dev', 'start');
  await new Promise((resolve) => squatter.close(resolve));
  assert.equal(failed.code, 1, failed.stdout);
  assert.match(failed.stderr, new RegExp(`port ${env.CAPT_DEV_PORT} is already in use by another program`));
  assert.deepEqual(await processesMentioning([home]), [], 'a failed start leaves nothing running');
  // Its keys are state, not processes: kept for the next start.
  assert.match(failed.stdout, new RegExp(`created the payload encryption key ${home}/codec-keys`));
  assert.equal(await listening('127.0.0.1', Number(env.CAPT_DEV_API_PORT)), false);
  assert.equal(await listening('127.0.0.1', Number(env.CAPT_DEV_CODEC_PORT)), false);

  const started = await capt('dev', 'start');
  assert.equal(started.code, 0, started.stderr);
  assert.match(started.stdout, new RegExp(`Web UI:\\s+http://127\\.0\\.0\\.1:${env.CAPT_DEV_UI_PORT}`));
  assert.ok(await listening('127.0.0.1', Number(env.CAPT_DEV_UI_PORT)), 'the Web UI answers');
  assert.equal((await stat(join(home, 'codec-keys'))).mode & 0o777, 0o600);
  const key = await readFile(join(home, 'codec-keys'), 'utf8');
  await assertUiUsesCodecServer();
  const status = await capt('dev', 'status');
  assert.match(status.stdout, /Temporal: running \(pid \d+, sqlite\)/);
  const metricsUrl = `http://127.0.0.1:${env.CAPT_DEV_METRICS_PORT}/metrics`;
  assert.match(status.stdout, new RegExp(`worker:\\s+running \\(pid \\d+\\), metrics at ${metricsUrl}`));
  // The worker serves its Prometheus metrics there (docs/metrics.md).
  const scraped = await fetch(metricsUrl);
  assert.equal(scraped.status, 200);
  assert.match(await scraped.text(), /^# TYPE temporal_\w+ /m);
  assert.match(status.stdout, new RegExp(`database: ${home}/dev/temporal\\.db`));
  assert.match(
    status.stdout,
    new RegExp(`codec:\\s+running \\(pid \\d+\\) at http://127\\.0\\.0\\.1:${env.CAPT_DEV_CODEC_PORT}`),
  );
  assert.match(status.stdout, /bridge:\s+running \(pid \d+\)/);
  // The bridge serves the management API: a Cluster whose control plane is missing is refused on the object
  // (the admission webhook lets it in: its objects may still be on their way).
  const kubeconfig = join(home, 'dev/management-api/etc/kubernetes/admin.conf');
  const kubectl = (...args: string[]) =>
    runProgram(kubectlFor(availableKubernetesVersions().at(-1)!), ['--kubeconfig', kubeconfig, ...args]);
  const lone = JSON.stringify({
    apiVersion: 'cluster.x-k8s.io/v1beta2',
    kind: 'Cluster',
    metadata: { name: 'lone', namespace: 'default' },
    spec: {
      controlPlaneRef: { apiGroup: 'controlplane.cluster.x-k8s.io', kind: 'KubeadmControlPlane', name: 'none' },
      infrastructureRef: { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: 'LocalCluster', name: 'none' },
    },
  });
  await writeFile(join(home, 'lone.json'), lone);
  const applied = await kubectl('apply', '-f', join(home, 'lone.json'));
  assert.equal(applied.code, 0, applied.stderr);
  const refusal = await until('the bridge to refuse Cluster lone', async () => {
    const got = await kubectl(
      'get',
      'cluster',
      'lone',
      '-o',
      'jsonpath={.status.conditions[?(@.type=="Accepted")].message}',
    );
    return got.stdout.includes('management API, Cluster default/lone') && got.stdout;
  });
  assert.match(refusal, /KubeadmControlPlane/);
  const again = await capt('dev', 'start');
  assert.equal(again.code, 0, 'start is idempotent');
  assert.equal((await processesMentioning([`${home}/dev/temporal.db`])).length, 1, 'one dev server, not two');
  assert.equal(await readFile(join(home, 'codec-keys'), 'utf8'), key, 'the key is kept');

  const versions = JSON.parse((await capt('versions', '-o', 'json')).stdout);
  assert.deepEqual(versions.providers.local.kubernetesVersions, availableKubernetesVersions());
  assert.deepEqual(
    Object.keys(versions.providers.local.kubectl),
    availableKubernetesVersions(),
    'a kubectl for each version',
  );
  assert.match(versions.capt, /^\d+\.\d+\.\d+$/);

  const stopped = await capt('dev', 'stop');
  assert.equal(stopped.code, 0);
  assert.deepEqual(await processesMentioning([home]), [], 'nothing of the stack keeps running');
  assert.equal(await listening('127.0.0.1', Number(env.CAPT_DEV_PORT)), false);
  assert.equal(
    await listening('127.0.0.1', Number(env.CAPT_DEV_CODEC_PORT)),
    false,
    "the codec server's port is closed",
  );
  assert.equal(
    await listening('127.0.0.1', Number(env.CAPT_DEV_API_PORT)),
    false,
    "the management API's port is closed",
  );
  assert.equal(
    await listening('127.0.0.1', Number(env.CAPT_DEV_METRICS_PORT)),
    false,
    "the worker's metrics port is closed",
  );
  assert.match((await capt('dev', 'status')).stdout, /Temporal: stopped/);
});

test('capt dev start --persistence postgres runs the production topology and a worker, refuses to switch while it runs, and stop leaves no process or port', async () => {
  await capt('dev', 'stop');
  const started = await capt('dev', 'start', '--persistence', 'postgres');
  assert.equal(started.code, 0, started.stderr);
  assert.match(started.stdout, /creating Temporal's databases/);
  const dataHome = postgresDataHome();
  assert.ok(
    !dataHome.startsWith(tmpdir()),
    `the database survives a reboot: ${dataHome} is not in the temporary directory`,
  );
  assert.ok(
    started.stdout.includes(`database: PostgreSQL 127.0.0.1:`) &&
      started.stdout.includes(`data in ${join(dataHome, 'data')}`),
    started.stdout,
  );
  assert.equal((await stat(dataHome)).mode & 0o777, 0o700, 'readable by its owner only');
  const status = await capt('dev', 'status');
  assert.match(status.stdout, /Temporal: running \(pid \d+, postgres\)/);
  assert.match(status.stdout, /worker:\s+running/);
  const ui = await fetch(`http://127.0.0.1:${env.CAPT_DEV_UI_PORT}/api/v1/namespaces/default`);
  assert.equal(ui.status, 200, 'the Web UI answers for the default namespace');
  await assertUiUsesCodecServer();
  const switched = await capt('dev', 'start', '--persistence', 'sqlite');
  assert.equal(switched.code, 1);
  assert.match(switched.stderr, /already runs with --persistence postgres; run `capt dev stop` first/);
  const again = await capt('dev', 'start');
  assert.equal(again.code, 0, 'start without --persistence keeps what runs');
  assert.doesNotMatch(again.stdout, /starting/);

  // A cluster made before the whole topology stops is managed after it starts again. `capt quickstart` makes it
  // on the running stack: it applies examples/quickstart.yaml, returns once the cluster is ready, and describes it.
  const applied = await capt(
    'quickstart',
    '--var',
    'CLUSTER_NAME=kept',
    '--var',
    'WORKER_MACHINE_COUNT=0',
    '--timeout',
    '5m',
  );
  assert.equal(applied.code, 0, applied.stderr);
  assert.doesNotMatch(applied.stdout, /^starting /m, 'the running stack is kept');
  assert.match(applied.stdout, /^cluster\.cluster\.x-k8s\.io\/kept created$/m);
  assert.match(applied.stdout, /^Cluster\/kept\s+True/m);
  assert.match(applied.stdout, /KubeadmControlPlane\/kept-control-plane \(1\/1/);
  assert.ok(
    applied.stdout.includes(
      `Temporal Web UI: http://127.0.0.1:${env.CAPT_DEV_UI_PORT}/namespaces/default/workflows?query=CaptCluster%3D%22kept%22`,
    ),
    applied.stdout,
  );
  assert.match(
    applied.stdout,
    /Try the cluster: +npx capt kubeconfig kept > kept\.kubeconfig && \S+kubectl\S* --kubeconfig/,
  );
  const [kept] = JSON.parse((await capt('get', 'clusters', '-o', 'json')).stdout).items;
  assert.deepEqual(
    [kept.name, kept.phase, kept.controlPlane.readyReplicas],
    ['kept', 'Provisioned', 1],
    'quickstart returned once the cluster was ready',
  );
  const { postgres } = JSON.parse(await readFile(join(home, 'dev/topology.json'), 'utf8')) as {
    postgres: { home: string; port: number };
  };
  assert.equal((await capt('dev', 'stop')).code, 0);
  assert.deepEqual(
    await processesMentioning([join(home, 'dev'), postgres.home]),
    [],
    'nothing of the topology keeps running (the cluster made before keeps its machines, as a stopped management plane does)',
  );
  for (const port of [
    env.CAPT_DEV_PORT,
    env.CAPT_DEV_UI_PORT,
    env.CAPT_DEV_CODEC_PORT,
    env.CAPT_DEV_API_PORT,
    postgres.port,
  ])
    assert.equal(await listening('127.0.0.1', Number(port)), false, `port ${port} closed`);

  const restarted = await capt('dev', 'start', '--persistence', 'postgres');
  assert.equal(restarted.code, 0, restarted.stderr);
  assert.doesNotMatch(restarted.stdout, /creating Temporal's databases/, 'the database is kept');
  const scaled = await capt('scale', 'machinedeployment', 'kept-md-0', '--replicas', '1', '--wait');
  assert.equal(scaled.code, 0, `the cluster made before the restart is managed: ${scaled.stderr}`);
  assert.match((await capt('get', 'machines')).stdout, /kept-md-0-\S+\s.*Running/);
  const deleted = await capt('delete', 'cluster', 'kept', '--wait');
  assert.equal(deleted.code, 0, deleted.stderr);
  assert.equal((await capt('dev', 'stop')).code, 0);
  const bad = await capt('dev', 'start', '--persistence', 'mysql');
  assert.deepEqual(
    [bad.code, bad.stderr.trim()],
    [2, 'error: --persistence mysql: choose sqlite (the Temporal dev server) or postgres (the production topology)'],
  );
});
