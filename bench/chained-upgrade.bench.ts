import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { parseAllDocuments, parse, stringify } from 'yaml';
import { CaptClient } from '../src/client/capt-client';
import type { ClusterStatus } from '../src/contract/cluster';
import { availableKubernetesVersions } from '../src/tools';
import { freePort } from '../src/util/free-port';
import { capiQuickStart } from '../test/fixtures/capi-quick-start';
import { resultHeader, runBenchmark, writeResult } from './bench-result';

/**
 * A chained upgrade across three minors on the real stack: `capt dev start` in a new capt home, Cluster API's
 * quick-start (kinds swapped) with 3 control-plane machines and 2 workers at the oldest version in the tool cache,
 * its ClusterClass listing the three versions in spec.kubernetesVersions. `capt apply --dry-run` to the newest
 * prints the plan first; then the apply, while a probe asks the cluster's endpoint for /readyz every 100 ms on a
 * new connection each time. Recorded: the dry run's text, every /readyz failure, each step's time, the plan as the
 * cluster's status showed it, each worker replaced once, and the control-plane machines' failure domains. Needs
 * `npm run setup -- --all-minors` (three minors); `node dist/bench/chained-upgrade.bench.js` writes
 * bench/results/chained-upgrade.json.
 */

const run = promisify(execFile);
const cli = join(__dirname, '..', 'src', 'cli', 'main.js');
const versions = availableKubernetesVersions().slice(-3);

interface Sample {
  atSeconds: number;
  controlPlane?: string;
  controlPlaneRolledOut?: boolean;
  workers: string[];
  upgradePlan?: ClusterStatus['upgradePlan'];
}

/** /readyz through the endpoint with the admin's certificate, a new TLS connection each time (as a new client). */
function readyz(endpoint: string, kubeconfig: string): Promise<string | undefined> {
  const config = parse(kubeconfig) as {
    clusters: { cluster: { 'certificate-authority-data': string } }[];
    users: { user: { 'client-certificate-data': string; 'client-key-data': string } }[];
  };
  const pem = (b64: string) => Buffer.from(b64, 'base64');
  const [host, port] = endpoint.split(':') as [string, string];
  return new Promise((resolve) => {
    const req = request(
      {
        host,
        port: Number(port),
        path: '/readyz',
        ca: pem(config.clusters[0]!.cluster['certificate-authority-data']),
        cert: pem(config.users[0]!.user['client-certificate-data']),
        key: pem(config.users[0]!.user['client-key-data']),
        agent: false,
        timeout: 2000,
      },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () =>
          resolve(res.statusCode === 200 ? undefined : `HTTP ${res.statusCode}: ${body.slice(0, 300)}`),
        );
      },
    );
    req.on('timeout', () => req.destroy(new Error('no answer within 2 s')));
    req.on('error', (err) => resolve(err.message));
    req.end();
  });
}

async function main(): Promise<void> {
  assert.equal(
    versions.length,
    3,
    `three Kubernetes minors are needed: run npm run setup -- --all-minors (have ${versions.join(', ')})`,
  );
  const [oldest, middle, newest] = versions as [string, string, string];
  const home = await mkdtemp(join(tmpdir(), 'capt-chained-'));
  const port = await freePort();
  const env = {
    ...process.env,
    CAPT_HOME: home,
    CAPT_DEV_PORT: String(port),
    CAPT_DEV_UI_PORT: String(await freePort()),
    CAPT_DEV_CODEC_PORT: String(await freePort()),
    CAPT_DEV_API_PORT: String(await freePort()),
    CAPT_DEV_METRICS_PORT: String(await freePort()),
    TEMPORAL_ADDRESS: `127.0.0.1:${port}`,
  };
  const capt = (...args: string[]) => run(process.execPath, [cli, ...args], { env, maxBuffer: 1 << 24 });
  const manifest = join(home, 'quick-start.yaml');
  const docs = parseAllDocuments(capiQuickStart('local')).map(
    (d) => d.toJS() as { kind: string; spec: Record<string, unknown> },
  );
  docs.find((d) => d.kind === 'ClusterClass')!.spec.kubernetesVersions = versions;
  await writeFile(manifest, docs.map((d) => stringify(d, { lineWidth: 0 })).join('---\n'));
  const vars = (version: string) =>
    [
      'CLUSTER_NAME=chain',
      'NAMESPACE=default',
      `KUBERNETES_VERSION=${version}`,
      'CONTROL_PLANE_MACHINE_COUNT=3',
      'WORKER_MACHINE_COUNT=2',
    ].flatMap((v) => ['--var', v]);
  let client: CaptClient | undefined;
  try {
    await capt('dev', 'start');
    const createdAt = Date.now();
    await capt('apply', '-f', manifest, ...vars(oldest), '--wait', '--timeout', '15m');
    const createSeconds = (Date.now() - createdAt) / 1000;
    Object.assign(process.env, { CAPT_HOME: home, TEMPORAL_ADDRESS: env.TEMPORAL_ADDRESS });
    client = await CaptClient.connect();
    const status = () => client!.clusterSummary('default', 'chain');
    const before = await status();
    const workersBefore = before.machineDeployments.length;
    // The class's failure domains (fd1-fd5 for control planes): the three control-plane machines spread over them.
    const controlPlaneDomains = async () =>
      ((await client!.clusterStatus('default', 'chain')).controlPlane?.machines ?? [])
        .filter((m) => !m.deleting)
        .map((m) => m.failureDomain ?? '')
        .sort();
    const domainsBefore = await controlPlaneDomains();
    const kubeconfig = (await capt('kubeconfig', 'chain')).stdout;
    const workerNames = async () =>
      (await client!.clusterStatus('default', 'chain')).machineDeployments.flatMap((md) =>
        md.machines.map((m) => m.name),
      );
    const seenWorkers = new Set(await workerNames());
    const initialWorkers = [...seenWorkers];

    // The plan, printed before anything moves.
    const dryRun = (await capt('apply', '-f', manifest, ...vars(newest), '--dry-run')).stdout;
    assert.match(dryRun, new RegExp(`1\\. control plane ${oldest} -> ${middle}: available`));
    assert.match(dryRun, new RegExp(`2\\. control plane ${middle} -> ${newest}: available`));
    assert.match(dryRun, new RegExp(`3\\. workers ${oldest} -> ${newest}`));
    assert.equal((await status()).controlPlane?.version, oldest, 'the dry run moved nothing');

    let probing = true;
    const failures: { atSeconds: number; error: string }[] = [];
    let probes = 0;
    const startedAt = Date.now();
    const at = () => Math.round((Date.now() - startedAt) / 100) / 10;
    const probe = (async () => {
      while (probing) {
        const error = await readyz(before.endpoint, kubeconfig);
        probes++;
        if (error) failures.push({ atSeconds: at(), error });
        await sleep(100);
      }
    })();
    const samples: Sample[] = [];
    const sampling = (async () => {
      while (probing) {
        const s = await status().catch(() => undefined);
        if (s)
          samples.push({
            atSeconds: at(),
            controlPlane: s.controlPlane?.version,
            controlPlaneRolledOut: s.controlPlane?.rolloutComplete,
            workers: s.machineDeployments.map((md) => `${md.version}${md.rolloutComplete ? '' : ' (rolling)'}`),
            ...(s.upgradePlan ? { upgradePlan: s.upgradePlan } : {}),
          });
        for (const name of await workerNames().catch(() => [])) seenWorkers.add(name);
        await sleep(250);
      }
    })();
    const applied = await capt('apply', '-f', manifest, ...vars(newest));
    // Mid-chain the target cannot move (Cluster API's rule): another version is refused, saying why.
    const retarget = await capt('apply', '-f', manifest, ...vars(middle)).then(
      () => 'accepted',
      (e: { stderr: string }) => e.stderr.trim(),
    );
    assert.match(retarget, /control plane is still completing a previous upgrade/);
    for (;;) {
      const s = await status();
      const done =
        s.controlPlane?.version === newest &&
        s.controlPlane.rolloutComplete &&
        s.machineDeployments.every((md) => md.version === newest && md.rolloutComplete && md.ready) &&
        !s.upgradePlan &&
        s.pending.length === 0;
      if (done) break;
      assert.ok(Date.now() - startedAt < 40 * 60_000, 'the chained upgrade did not finish within 40 minutes');
      await sleep(1000);
    }
    const upgradeSeconds = (Date.now() - startedAt) / 1000;
    probing = false;
    await Promise.all([probe, sampling]);
    for (const name of await workerNames()) seenWorkers.add(name);

    // When the control plane was given each version (the one before then ran everywhere), when it ran the last
    // everywhere, and when the workers started.
    const firstAt = (f: (s: Sample) => boolean) => samples.find(f)?.atSeconds;
    const steps = {
      controlPlaneGivenAt: Object.fromEntries([middle, newest].map((v) => [v, firstAt((s) => s.controlPlane === v)])),
      controlPlaneDoneAt: firstAt((s) => s.controlPlane === newest && !!s.controlPlaneRolledOut),
      workersStartedAt: firstAt((s) => s.workers.some((w) => w.startsWith(newest))),
      plansShown: [...new Set(samples.flatMap((s) => (s.upgradePlan ? [JSON.stringify(s.upgradePlan)] : [])))],
      controlPlaneVersionsSeen: [...new Set(samples.map((s) => s.controlPlane))],
    };
    const workersReplaced = seenWorkers.size - initialWorkers.length;
    await writeResult('chained-upgrade', {
      ...resultHeader(),
      scenario: `Cluster API's quick-start (kinds swapped), 3 control-plane machines and ${workersBefore} MachineDeployment of 2, ClusterClass spec.kubernetesVersions ${versions.join(', ')}; capt apply ${oldest} -> ${newest}`,
      createSeconds,
      upgradeSeconds,
      applied: applied.stdout.trim(),
      retargetMidChain: retarget,
      dryRun: dryRun.trim().split('\n'),
      readyz: { probes, failures },
      steps,
      workers: { initial: initialWorkers.length, replaced: workersReplaced },
      controlPlaneFailureDomains: { created: domainsBefore, upgraded: await controlPlaneDomains() },
      samples: samples.filter(
        (s, i) =>
          i === 0 || JSON.stringify({ ...s, atSeconds: 0 }) !== JSON.stringify({ ...samples[i - 1], atSeconds: 0 }),
      ),
    });
    assert.equal(failures.length, 0, `/readyz failed ${failures.length} times of ${probes}`);
    assert.deepEqual(
      steps.controlPlaneVersionsSeen,
      [oldest, middle, newest],
      'the control plane stepped through each minor',
    );
    assert.ok(
      steps.workersStartedAt! >= steps.controlPlaneDoneAt!,
      'no worker upgraded before the control plane ran the target',
    );
    assert.equal(workersReplaced, initialWorkers.length, 'each worker replaced once, straight to the target');
    assert.deepEqual(domainsBefore, ['fd1', 'fd2', 'fd3'], 'the control plane spread over three failure domains');
    assert.equal(new Set(await controlPlaneDomains()).size, 3, 'and stays spread after two rollouts');
  } finally {
    await client?.close();
    await capt('delete', 'cluster', 'chain', '--wait', '--timeout', '10m').catch(() => undefined);
    await capt('dev', 'stop').catch(() => undefined);
    await rm(home, { recursive: true, force: true });
  }
}

runBenchmark(main);
