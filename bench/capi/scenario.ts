import { cpuBetween, peakRss, readUsage, type Parts } from './process-usage';
import { countersBetween, type CounterSource, type Counters } from './step-counters';

/** The workload both systems get, whatever they run it with. */
export interface Workload {
  workers: number;
  /** The version the cluster is created at, and the one minor up it is upgraded to. */
  fromVersion: string;
  toVersion: string;
  /** Cluster API's in-memory provisioning delays: zero, or those of its e2e tests (VM 10 s, node/apiserver/etcd 2 s). */
  delays: 'zero' | 'e2e';
}

/** One system's way of carrying out each step; each returns once the step is complete. */
export interface ClusterDriver {
  /** 1 control-plane machine + a MachineDeployment of `workers` (maxSurge 10%, maxUnavailable 0), all Running. */
  create(): Promise<void>;
  scaleControlPlane(replicas: number): Promise<void>;
  upgradeControlPlane(version: string): Promise<void>;
  rolloutWorkers(version: string): Promise<void>;
  scaleWorkersToZero(): Promise<void>;
  deleteCluster(): Promise<void>;
  /** The management plane's processes now (they may change between steps). */
  parts(): Promise<Parts>;
  /** The system's own request and work counters, read before and after each step. */
  counters: CounterSource;
  /** CPU profiles of the steps asked for (--cpu-profile). */
  profiler?: StepProfiler;
}

/** A step's CPU profile: the summary the result keeps, and a line for the log. */
export interface StepProfile {
  summary: object;
  line: string;
}

/** Profiles the steps it was asked for; for every other step both calls do nothing. */
export interface StepProfiler {
  start(step: string): Promise<void>;
  stop(step: string): Promise<StepProfile | undefined>;
}

export interface StepResult {
  seconds: number;
  machines: number;
  machinesPerSecond: number;
  cpuSeconds: Record<string, number>;
  cpuSecondsPerMachine: number;
  /** Each part's peak resident set since it started, read at the end of the step. */
  peakRssMiB: Record<string, number>;
  /** What the counters grew by during the step (see step-counters.ts), read outside the CPU window. */
  counters: Counters;
  cpuProfile?: object;
}

const controlPlaneReplicas = 3;

/** The scenario's steps, in order. */
export const stepNames = [
  'create',
  'controlPlaneScaleUp',
  'controlPlaneUpgrade',
  'workerRollout',
  'scaleToZero',
  'clusterDelete',
] as const;
export type StepName = (typeof stepNames)[number];

/**
 * The scenario, in the order the systems allow it (the control plane is upgraded before the workers:
 * Cluster API's KubeadmVersionSkew preflight and capt's hold both require it). `machines` is what each
 * step creates, replaces or deletes.
 */
export async function runScenario(
  driver: ClusterDriver,
  w: Workload,
  log: (line: string) => void,
  onStep: (done: Record<string, StepResult>) => Promise<void> = async () => undefined,
): Promise<Record<string, StepResult>> {
  const steps: [StepName, number, () => Promise<void>][] = [
    ['create', w.workers + 1, () => driver.create()],
    ['controlPlaneScaleUp', controlPlaneReplicas - 1, () => driver.scaleControlPlane(controlPlaneReplicas)],
    ['controlPlaneUpgrade', controlPlaneReplicas, () => driver.upgradeControlPlane(w.toVersion)],
    ['workerRollout', w.workers, () => driver.rolloutWorkers(w.toVersion)],
    ['scaleToZero', w.workers, () => driver.scaleWorkersToZero()],
    ['clusterDelete', controlPlaneReplicas, () => driver.deleteCluster()],
  ];
  const results: Record<string, StepResult> = {};
  for (const [name, machines, run] of steps) {
    const parts = await driver.parts();
    // Read before the usage and after it, so reading a metrics page is not in the step's CPU-seconds.
    const countersBefore = await driver.counters.read();
    const before = await readUsage(parts);
    log(`${name}: started (${machines} machines)`);
    await driver.profiler?.start(name);
    const started = Date.now();
    await run();
    const seconds = (Date.now() - started) / 1000;
    const after = await readUsage(parts);
    // Stopped after the usage reading: writing the profile out is not the step's work.
    const profile = await driver.profiler?.stop(name);
    const cpuSeconds = cpuBetween(before, after);
    const counters = countersBetween(countersBefore, await driver.counters.read());
    results[name] = {
      seconds,
      machines,
      machinesPerSecond: Number((machines / seconds).toFixed(3)),
      cpuSeconds,
      cpuSecondsPerMachine: Number((cpuSeconds.total! / machines).toFixed(4)),
      peakRssMiB: peakRss(after),
      counters,
      ...(profile ? { cpuProfile: profile.summary } : {}),
    };
    log(
      `${name}: done in ${seconds.toFixed(1)} s, ${results[name].machinesPerSecond} machines/s, ${cpuSeconds.total} CPU-s, peak RSS ${results[name].peakRssMiB.total} MiB`,
    );
    log(`${name}: ${driver.counters.describe(counters)}`);
    if (profile) log(`${name}: ${profile.line}`);
    await onStep(results);
  }
  return results;
}

/** Polls `check` every `intervalMs` until it returns true; `describe` says where things are, printed every 10 s and in the timeout error. */
export async function waitUntil(
  what: string,
  check: () => Promise<boolean>,
  describe: () => Promise<string>,
  log: (line: string) => void,
  timeoutMs: number,
  intervalMs = 1000,
): Promise<void> {
  const started = Date.now();
  let lastLog = started;
  for (;;) {
    if (await check()) return;
    if (Date.now() - started > timeoutMs)
      throw new Error(`${what}: not done after ${Math.round(timeoutMs / 1000)} s; ${await describe()}`);
    if (Date.now() - lastLog >= 10_000) {
      lastLog = Date.now();
      log(`${what}: ${Math.round((lastLog - started) / 1000)} s; ${await describe()}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
