import { execFile } from 'node:child_process';
import { copyFile, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { createCertificateAuthority, issueCertificate } from '../../src/pki/certificates';
import { kubeconfigCredentials } from '../../src/pki/kubeconfig';
import { writeTree } from '../../src/util/files';
import { logTail, runningPid, startDetached, stopProcess } from '../../src/util/processes';
import { startKubeControlPlane, type KubeControlPlane } from '../../test/fixtures/kube-control-plane';
import { processGroup } from '../../test/fixtures/leaks';
import { managementManifests, managerNamespace, upstreamManagerArgs, webhookPort } from './capi-manifests';
import { capiModules, managerNames, type CapiModules, type ManagerName } from './capi-modules';
import type { GoProfileTarget } from './go-cpu-profile';
import { ManagementApi } from '../../src/management-api/api-client';
import { waitForEstablished } from '../../src/management-api/crd-install';
import type { Parts } from './process-usage';

/** The managers' settings: v1.14's defaults, or the scale tuning Cluster API's tuning guide describes. */
export const tunings = ['default', 'scale'] as const;
export type Tuning = (typeof tunings)[number];

export interface CapiManagement {
  modules: CapiModules;
  api: ManagementApi;
  kubernetesVersion: string;
  /** The management cluster's processes by part (each manager, kubeApiserver, etcd, kubeControllerManager, kubeScheduler). */
  parts(): Promise<Parts>;
  /** The four managers and the management apiserver, for --cpu-profile. */
  profileTargets: GoProfileTarget[];
  stop(): Promise<void>;
}

const managerStateDir = (cp: KubeControlPlane) => join(cp.root, 'capi');

/** Each manager's diagnostics endpoint (controller-runtime's /metrics, plain HTTP with --insecure-diagnostics). */
export const diagnosticsPort = (m: ManagerName) => 8443 + managerNames.indexOf(m);

/** Each manager's pprof endpoint (--profiler-address; the diagnostics endpoint serves pprof only over its authenticated https). */
const profilerPort = (m: ManagerName) => 6060 + managerNames.indexOf(m);

/** A manager's CPU profile from its pprof endpoint. */
const managerProfileTarget = (m: ManagerName): GoProfileTarget => ({
  name: m,
  async profile(seconds, timeoutMs) {
    const url = `http://127.0.0.1:${profilerPort(m)}/debug/pprof/profile?seconds=${seconds}`;
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    if (!res.ok) throw new Error(`GET ${url}: ${res.status} ${(await res.text()).slice(0, 200)}`);
    return Buffer.from(await res.arrayBuffer());
  },
});

/** What a manager's --help prints (it exits non-zero after printing, as pflag's help does). */
async function managerHelp(binary: string): Promise<string> {
  const { stdout, stderr } = await promisify(execFile)(binary, ['--help']).catch(
    (err: { stdout?: string; stderr?: string }) => ({ stdout: err.stdout ?? '', stderr: err.stderr ?? '' }),
  );
  return `${stdout}${stderr}`;
}

/**
 * `--<controller>-concurrency=100` for every controller the manager has (read from its --help, so a new
 * controller is not missed) and client-go at 200 QPS / 300 burst.
 */
function scaleTuningArgs(binary: string, help: string): string[] {
  const concurrency = [...new Set([...help.matchAll(/--([a-z-]+-concurrency) int/g)].map((m) => m[1]!))];
  if (concurrency.length === 0)
    throw new Error(`${binary} --help lists no --*-concurrency flag: cannot apply the scale tuning`);
  return [...concurrency.map((f) => `--${f}=100`), '--kube-api-qps=200', '--kube-api-burst=300'];
}

/** The pprof endpoint for --cpu-profile, refused clearly if this manager's build has no such flag. */
function profilerArgs(m: ManagerName, binary: string, help: string): string[] {
  if (!help.includes('--profiler-address'))
    throw new Error(
      `${binary} --help lists no --profiler-address: Cluster API's ${m} manager cannot be profiled (run without --cpu-profile)`,
    );
  return [`--profiler-address=127.0.0.1:${profilerPort(m)}`];
}

async function managerArgs(
  m: ManagerName,
  modules: CapiModules,
  certDir: string,
  tuning: Tuning,
  profiling: boolean,
  variables: Record<string, string>,
): Promise<string[]> {
  const index = managerNames.indexOf(m);
  const binary = modules.binaries[m];
  const help = tuning === 'scale' || profiling ? await managerHelp(binary) : '';
  return [
    ...(await upstreamManagerArgs(modules.configDirs[m], variables)),
    `--webhook-port=${webhookPort(m)}`,
    `--webhook-cert-dir=${certDir}`,
    `--health-addr=127.0.0.1:${9450 + index}`,
    `--diagnostics-address=127.0.0.1:${diagnosticsPort(m)}`,
    '--insecure-diagnostics=true',
    ...(tuning === 'scale' ? scaleTuningArgs(binary, help) : []),
    ...(profiling ? profilerArgs(m, binary, help) : []),
  ];
}

/** Copies the managers' and the control plane's logs out of the run's folder, which stop removes. */
async function keepLogs(cp: KubeControlPlane, dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const from of [managerStateDir(cp), join(cp.root, 'run')]) {
    for (const file of (await readdir(from).catch(() => [] as string[])).filter((f) => f.endsWith('.log')))
      await copyFile(join(from, file), join(dir, file));
  }
}

/** Waits for a manager's /readyz (its webhook server included); a manager that exits fails at once with its log. */
async function waitForManager(stateDir: string, m: ManagerName, timeoutMs = 120_000): Promise<void> {
  const url = `http://127.0.0.1:${9450 + managerNames.indexOf(m)}/readyz`;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!(await runningPid(stateDir, m)))
      throw new Error(`${m} exited while starting:\n${await logTail(stateDir, m, 30)}`);
    const ok = await fetch(url).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await sleep(500);
  }
  throw new Error(`${m} not ready within ${timeoutMs / 1000} s:\n${await logTail(stateDir, m, 30)}`);
}

/**
 * Starts Cluster API's management plane inside the caller's network namespace (the managers' webhook
 * servers and the in-memory backend's load balancers bind every address): capt's cached etcd,
 * kube-apiserver and controller-manager, the CRDs and webhook configurations, one serving certificate,
 * and the four managers with leader election off and `variables` substituted into their arguments as clusterctl
 * does. `stop` ends everything it started.
 */
export async function startCapiManagement(
  tuning: Tuning,
  profiling: boolean,
  log: (line: string) => void,
  variables: Record<string, string> = {},
): Promise<CapiManagement> {
  const modules = capiModules();
  const cp = await startKubeControlPlane();
  const stateDir = managerStateDir(cp);
  const creds = kubeconfigCredentials(cp.kubeconfig);
  const api = new ManagementApi(cp.server, creds);
  const stop = async () => {
    for (const m of managerNames) await stopProcess(stateDir, m);
    if (process.env.CAPI_BENCH_LOGS) await keepLogs(cp, process.env.CAPI_BENCH_LOGS);
    api.close();
    await cp.stop();
    await rm(stateDir, { recursive: true, force: true });
  };
  try {
    log(`management control plane: Kubernetes ${cp.version} at ${cp.server}`);
    const ca = await createCertificateAuthority('capi-webhooks');
    const serving = await issueCertificate(ca, {
      commonName: 'capi-webhooks',
      ipAddresses: ['127.0.0.1'],
      usage: 'server',
    });
    const certDir = join(stateDir, 'certs');
    await writeTree(certDir, { 'tls.crt': serving.cert, 'tls.key': serving.key });
    const kubeconfig = join(stateDir, 'admin.conf');
    await writeFile(kubeconfig, cp.kubeconfig, { mode: 0o600 });
    const manifests = await managementManifests(modules, ca.cert);
    for (const object of manifests) await api.create(object);
    // A manager builds its controllers from discovery at start, so every CRD must be served first.
    await waitForEstablished(
      api,
      manifests.filter((o) => o.kind === 'CustomResourceDefinition').map((o) => (o.metadata as { name: string }).name),
    );
    log(
      `installed ${manifests.length} objects (namespaces, CRDs, webhook configurations) of Cluster API ${modules.version}`,
    );
    for (const m of managerNames) {
      await startDetached({
        name: m,
        stateDir,
        command: modules.binaries[m],
        args: await managerArgs(m, modules, certDir, tuning, profiling, variables),
        // A pod's downward-API values: the in-memory backend serves fake workload apiservers on POD_IP.
        env: {
          KUBECONFIG: kubeconfig,
          POD_NAMESPACE: await managerNamespace(modules.configDirs[m]),
          POD_IP: '127.0.0.1',
        },
      });
    }
    for (const m of managerNames) await waitForManager(stateDir, m);
    log(`managers ready (${tuning} tuning): ${managerNames.join(', ')}`);
    const componentStateDir = join(cp.root, 'run');
    const parts = async () => {
      const names: [string, string, string][] = [
        ...managerNames.map((m): [string, string, string] => [m, stateDir, m]),
        ['kubeApiserver', componentStateDir, 'kube-apiserver'],
        ['etcd', componentStateDir, 'etcd'],
        ['kubeControllerManager', componentStateDir, 'kube-controller-manager'],
        ['kubeScheduler', componentStateDir, 'kube-scheduler'],
      ];
      const out: Parts = {};
      for (const [part, dir, name] of names) {
        // The control-plane components run under a restart loop: the recorded pid leads their process group.
        const pid = await runningPid(dir, name);
        if (pid) out[part] = await processGroup(pid);
      }
      return out;
    };
    const profileTargets = [
      ...managerNames.map(managerProfileTarget),
      {
        name: 'kubeApiserver',
        profile: (seconds: number, timeoutMs: number) =>
          api.getBytes(`/debug/pprof/profile?seconds=${seconds}`, timeoutMs),
      },
    ];
    return { modules, api, kubernetesVersion: cp.version, parts, profileTargets, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
