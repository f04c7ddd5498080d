import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { parseAllDocuments, stringify } from 'yaml';
import { availableKubernetesVersions, clusterctlPath, kubectlFor } from '../src/tools';
import { freePort } from '../src/util/free-port';

/**
 * What clusterctl shows of a capt cluster mid-rollout, through the management API: `capt dev start` in a new
 * capt home, a cluster of 3 control-plane machines and two MachineDeployments of 2 applied with kubectl at the
 * older Kubernetes version, then its control plane and workers moved to the newer one with kubectl patch, and
 * `clusterctl describe cluster --show-conditions all` taken every 2 s until the rollout is done. The takes
 * with the control plane rolling and with the workers rolling are written to
 * bench/results/clusterctl-describe-mid-rollout.txt. `node dist/bench/describe-mid-rollout.bench.js`.
 */

const run = promisify(execFile);
const cli = join(__dirname, '..', 'src', 'cli', 'main.js');
const [older, newer] = availableKubernetesVersions().slice(-2) as [string, string];

async function main(): Promise<void> {
  const home = await mkdtemp(join(tmpdir(), 'capt-describe-'));
  const env = {
    ...process.env,
    CAPT_HOME: home,
    CAPT_DEV_PORT: String(await freePort()),
    CAPT_DEV_UI_PORT: String(await freePort()),
    CAPT_DEV_CODEC_PORT: String(await freePort()),
    CAPT_DEV_API_PORT: String(await freePort()),
    CAPT_DEV_METRICS_PORT: String(await freePort()),
  };
  const capt = (...args: string[]) => run(process.execPath, [cli, ...args], { env, maxBuffer: 1 << 24 });
  const kubeconfig = join(home, 'management.kubeconfig');
  const kubectl = (...args: string[]) => run(kubectlFor(newer), ['--kubeconfig', kubeconfig, ...args], { env });
  const describe = async () =>
    (
      await run(
        clusterctlPath(),
        ['describe', 'cluster', 'mid', '--show-conditions', 'all', '--kubeconfig', kubeconfig],
        {
          env: { ...env, CLUSTERCTL_DISABLE_VERSIONCHECK: 'true' },
        },
      )
    ).stdout;
  try {
    await capt('dev', 'start');
    await writeFile(kubeconfig, (await capt('dev', 'kubeconfig')).stdout, { mode: 0o600 });
    const generated = (
      await capt(
        'generate',
        'cluster',
        'mid',
        '--flavor',
        'ha',
        '--kubernetes-version',
        older,
        '--worker-machine-count',
        '2',
      )
    ).stdout;
    // A second MachineDeployment like the first, with its own templates and pool label.
    const docs = parseAllDocuments(generated).map((d) => d.toJSON() as { kind: string; metadata: { name: string } });
    const second = docs
      .filter((d) => d.metadata.name === 'mid-md-0')
      .map((d) => JSON.parse(JSON.stringify(d).replaceAll('mid-md-0', 'mid-md-1').replaceAll('md-0', 'md-1')));
    const manifest = join(home, 'mid.yaml');
    await writeFile(manifest, [...docs, ...second].map((d) => stringify(d)).join('---\n'));
    await kubectl('apply', '-f', manifest);
    const started = Date.now();
    await kubectl('wait', '--for=condition=Available', 'cluster/mid', '--timeout=15m');
    // Every machine up, not only enough for Available, so the rollout replaces running machines of every owner.
    await kubectl(
      'wait',
      '--for=jsonpath={.status.readyReplicas}=3',
      'kubeadmcontrolplane/mid-control-plane',
      '--timeout=10m',
    );
    for (const md of ['mid-md-0', 'mid-md-1'])
      await kubectl('wait', '--for=jsonpath={.status.readyReplicas}=2', `machinedeployment/${md}`, '--timeout=10m');
    console.log(`cluster mid's 7 machines ready ${Math.round((Date.now() - started) / 1000)} s after kubectl apply`);
    const patch = (kind: string, name: string, body: object) =>
      kubectl('patch', `${kind}/${name}`, '--type=merge', '-p', JSON.stringify(body));
    await patch('kubeadmcontrolplane', 'mid-control-plane', { spec: { version: newer } });
    for (const md of ['mid-md-0', 'mid-md-1'])
      await patch('machinedeployment', md, { spec: { template: { spec: { version: newer } } } });
    const takes: { at: number; text: string }[] = [];
    for (const deadline = Date.now() + 20 * 60_000; Date.now() < deadline; await sleep(2000)) {
      const text = await describe();
      takes.push({ at: Math.round((Date.now() - started) / 1000), text });
      const done = (await kubectl('get', 'machines', '-o', 'jsonpath={.items[*].spec.version}')).stdout
        .split(' ')
        .every((v) => v === newer);
      if (done && !/RollingOut\s+True/.test(text)) break;
    }
    // Two takes from the rollout (a third and two thirds of the way) and the last, when it is done.
    const rolling = takes.filter((t) => /RollingOut\s+True/.test(t.text));
    const picked = [rolling[Math.floor(rolling.length / 3)], rolling[Math.floor((2 * rolling.length) / 3)]];
    const out = [
      `# clusterctl describe cluster mid --show-conditions all, mid-rollout ${older} -> ${newer}`,
      `# capt at ${(await run('git', ['rev-parse', '--short', 'HEAD'])).stdout.trim()}, ${new Date().toISOString()}; ${takes.length} takes every 2 s, ${rolling.length} rolling`,
      ...picked.flatMap((t) => (t ? [`\n## ${t.at} s after kubectl apply: rolling out\n`, t.text] : [])),
      `\n## ${takes.at(-1)!.at} s after kubectl apply: done\n`,
      takes.at(-1)!.text,
    ].join('\n');
    await writeFile(join(__dirname, '..', '..', 'bench', 'results', 'clusterctl-describe-mid-rollout.txt'), out);
    console.log(out);
    await kubectl('delete', 'cluster', 'mid', '--timeout=10m');
  } finally {
    await capt('dev', 'stop').catch(() => undefined);
    await rm(home, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
