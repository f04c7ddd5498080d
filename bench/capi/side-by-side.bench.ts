import { parseArgs } from 'node:util';
import { availableKubernetesVersions } from '../../src/tools';
import {
  profileDir as profileDirOf,
  readResult,
  resultHeader,
  resultPath,
  runBenchmark,
  writeResult,
} from '../bench-result';
import { stopOnSignal } from '../stop-on-signal';
import { capiDriver } from './capi-driver';
import { goStepProfiler } from './go-cpu-profile';
import { startCapiManagement, tunings, type Tuning } from './capi-management';
import { startCapt } from './capt-driver';
import { inNetworkNamespace, rerunInNetworkNamespace } from './network-namespace';
import { runScenario, stepNames, type ClusterDriver, type StepName, type StepResult, type Workload } from './scenario';

/**
 * The same scenario for Cluster API and capt, one system per run, each repetition from a clean start:
 * create 1 control plane + N workers, scale the control plane to 3, upgrade it one minor, roll the workers
 * to that version (maxSurge 10%, maxUnavailable 0), scale them to 0, delete the cluster.
 *   node dist/bench/capi/side-by-side.bench.js --system capi|capt --workers N [--repetitions R] [--tuning default|scale] [--delays zero|e2e] [--label NAME] [--cpu-profile STEP[,STEP]] [--resume]
 * writes bench/results/side-by-side-<system>-<N>[-scale][-e2e][-NAME].json (a label keeps a trial run from
 * overwriting the committed figures); --resume keeps that file's repetitions and runs only the ones it
 * lacks, so a 30-minute repetition need not be run again. Cluster API's run goes on in a network
 * namespace of its own (the script re-runs itself under unshare).
 */
const options = {
  system: { type: 'string', default: '' },
  workers: { type: 'string', default: '10' },
  repetitions: { type: 'string', default: '1' },
  tuning: { type: 'string', default: 'default' },
  delays: { type: 'string', default: 'zero' },
  label: { type: 'string', default: '' },
  'cpu-profile': { type: 'string', default: '' },
  resume: { type: 'boolean', default: false },
} as const;

const usage =
  'usage: side-by-side.bench.js --system capi|capt --workers N [--repetitions R] [--tuning default|scale] [--delays zero|e2e] [--label NAME] [--cpu-profile STEP[,STEP]] [--resume]';

interface Settings {
  system: 'capi' | 'capt';
  tuning: Tuning;
  repetitions: number;
  workload: Workload;
  label: string;
  /** The steps to profile (none: no profiler runs): capt's worker, or Cluster API's managers and management apiserver. */
  cpuProfile: StepName[];
  resume: boolean;
}

function settings(): Settings {
  const { values } = parseArgs({ options, strict: true });
  const workers = Number(values.workers);
  const repetitions = Number(values.repetitions);
  const bad = (what: string) => new Error(`${what}\n${usage}`);
  if (values.system !== 'capi' && values.system !== 'capt')
    throw bad(`--system must be capi or capt, not "${values.system}"`);
  if (!Number.isInteger(workers) || workers < 1)
    throw bad(`--workers must be a whole number of at least 1, not "${values.workers}"`);
  if (!Number.isInteger(repetitions) || repetitions < 1)
    throw bad(`--repetitions must be a whole number of at least 1, not "${values.repetitions}"`);
  if (!(tunings as readonly string[]).includes(values.tuning))
    throw bad(`--tuning must be one of ${tunings.join(', ')}, not "${values.tuning}"`);
  if (values.delays !== 'zero' && values.delays !== 'e2e')
    throw bad(`--delays must be zero or e2e, not "${values.delays}"`);
  if (!/^[a-z0-9-]*$/.test(values.label))
    throw bad(`--label may hold only lower-case letters, digits and dashes, not "${values.label}"`);
  const cpuProfile = values['cpu-profile'] ? values['cpu-profile'].split(',') : [];
  const notSteps = cpuProfile.filter((step) => !(stepNames as readonly string[]).includes(step));
  if (notSteps.length)
    throw bad(
      `--cpu-profile takes steps separated by commas (${stepNames.join(', ')}); "${notSteps.join('", "')}" is not one`,
    );
  if (values.system === 'capt' && values.tuning !== 'default')
    throw bad("--tuning applies to Cluster API's managers only (--system capi)");
  // The two newest Kubernetes versions capt has built: the upgrade goes one minor up, on both systems.
  const [fromVersion, toVersion] = availableKubernetesVersions().slice(-2);
  if (!fromVersion || !toVersion)
    throw new Error("capt's tools hold fewer than two Kubernetes versions: run `npm run setup`");
  return {
    system: values.system,
    tuning: values.tuning as Tuning,
    repetitions,
    label: values.label,
    cpuProfile: cpuProfile as StepName[],
    resume: values.resume,
    workload: { workers, fromVersion, toVersion, delays: values.delays },
  };
}

const log = (line: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`);

/** The system's stack for one repetition: the scenario's driver, what to stop, and the versions it runs; Cluster API's merged profiles go to `profileDir`. */
async function startStack(
  s: Settings,
  profileDir: string,
): Promise<{ what: string; driver: ClusterDriver; stop: () => Promise<void>; versions: Record<string, string> }> {
  if (s.system === 'capi') {
    const m = await startCapiManagement(s.tuning, s.cpuProfile.length > 0, log);
    const profiler = s.cpuProfile.length ? goStepProfiler(s.cpuProfile, m.profileTargets, profileDir) : undefined;
    const stop = async () => {
      await profiler?.dispose();
      await m.stop();
    };
    return {
      what: "Cluster API's management plane",
      driver: { ...capiDriver(m, s.workload, log), profiler },
      stop,
      versions: { clusterApi: m.modules.version, managementKubernetes: m.kubernetesVersion },
    };
  }
  const capt = await startCapt(s.workload, log, s.cpuProfile);
  return {
    what: "capt's stack and its machines",
    driver: capt.driver,
    stop: () => capt.stop(),
    versions: capt.versions,
  };
}

/** One repetition on a clean stack, which is stopped whatever happens, an interrupt included. */
async function repetition(
  s: Settings,
  profileDir: string,
  onStep: (done: Record<string, StepResult>) => Promise<void>,
): Promise<{ steps: Record<string, StepResult>; versions: Record<string, string> }> {
  const stack = await startStack(s, profileDir);
  const { stop, letGo } = stopOnSignal(stack.what, stack.stop);
  try {
    return { steps: await runScenario(stack.driver, s.workload, log, onStep), versions: stack.versions };
  } finally {
    await stop();
    letGo();
  }
}

const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/** Per step: the median and the spread (min, max) of the headline figures over the repetitions. */
function summarise(runs: Record<string, StepResult>[]): Record<string, unknown> {
  const figures: Record<string, (r: StepResult) => number> = {
    seconds: (r) => r.seconds,
    machinesPerSecond: (r) => r.machinesPerSecond,
    cpuSeconds: (r) => r.cpuSeconds.total!,
    cpuSecondsPerMachine: (r) => r.cpuSecondsPerMachine,
    peakRssMiB: (r) => r.peakRssMiB.total!,
  };
  return Object.fromEntries(
    Object.keys(runs[0]!).map((step) => [
      step,
      Object.fromEntries(
        Object.entries(figures).map(([name, of]) => {
          const xs = runs.map((r) => of(r[step]!));
          return [name, { median: Number(median(xs).toFixed(4)), min: Math.min(...xs), max: Math.max(...xs) }];
        }),
      ),
    ]),
  );
}

/** A result file written earlier: its repetitions count toward this run's when they ran the same settings. */
interface EarlierResult {
  date: string;
  commit: string;
  system: string;
  workers: number;
  tuning?: string;
  delays: string;
  versions: Record<string, string>;
  incomplete?: unknown;
  runs: Record<string, StepResult>[];
  resumed?: { date: string; commit: string; repetitions: number }[];
}

/** The repetitions of bench/results/<name>.json to carry on from, refused unless they ran these settings. */
async function earlierRuns(name: string, s: Settings): Promise<EarlierResult> {
  const path = resultPath(name);
  const earlier = (await readResult(name).catch((err: NodeJS.ErrnoException) => {
    throw new Error(`--resume: cannot read ${path} (${err.code ?? err.message}); run without --resume to start afresh`);
  })) as EarlierResult;
  const want = {
    system: s.system,
    workers: s.workload.workers,
    tuning: s.system === 'capi' ? s.tuning : undefined,
    delays: s.workload.delays,
    from: s.workload.fromVersion,
    to: s.workload.toVersion,
  };
  const have = {
    system: earlier.system,
    workers: earlier.workers,
    tuning: earlier.tuning,
    delays: earlier.delays,
    from: earlier.versions.workloadFrom,
    to: earlier.versions.workloadTo,
  };
  if (JSON.stringify(want) !== JSON.stringify(have))
    throw new Error(
      `--resume: ${path} ran ${JSON.stringify(have)}, not ${JSON.stringify(want)}; give the settings it ran`,
    );
  if (earlier.incomplete)
    throw new Error(
      `--resume: ${path} holds a repetition cut short; its complete ones are in runs, but rerun it whole rather than mix a partial one in`,
    );
  if (earlier.runs.length >= s.repetitions)
    throw new Error(
      `--resume: ${path} already holds ${earlier.runs.length} repetitions; ask for more than that with --repetitions`,
    );
  return earlier;
}

async function main(): Promise<void> {
  const s = settings();
  if (s.system === 'capi' && !inNetworkNamespace()) {
    process.exitCode = await rerunInNetworkNamespace();
    return;
  }
  const name = [
    'side-by-side',
    s.system,
    s.workload.workers,
    ...(s.tuning === 'scale' ? ['scale'] : []),
    ...(s.workload.delays === 'e2e' ? ['e2e'] : []),
    ...(s.label ? [s.label] : []),
  ].join('-');
  const earlier = s.resume ? await earlierRuns(name, s) : undefined;
  const runs: Record<string, StepResult>[] = [...(earlier?.runs ?? [])];
  let versions: Record<string, string> = {};
  // Where the carried-over repetitions came from, oldest first; this run's own commit and date head the file.
  const carried = (earlier?.resumed ?? []).reduce((sum, r) => sum + r.repetitions, 0);
  const resumed = earlier
    ? [
        ...(earlier.resumed ?? []),
        { date: earlier.date, commit: earlier.commit, repetitions: earlier.runs.length - carried },
      ]
    : undefined;
  const result = (extra: Record<string, unknown>) => ({
    ...resultHeader(),
    system: s.system,
    workers: s.workload.workers,
    repetitions: s.repetitions,
    tuning: s.system === 'capi' ? s.tuning : undefined,
    delays: s.workload.delays,
    versions: { ...versions, workloadFrom: s.workload.fromVersion, workloadTo: s.workload.toVersion },
    ...(resumed ? { resumed } : {}),
    ...extra,
  });
  // The carried-over repetitions' own Cluster API or capt versions, which every new one must match.
  const { workloadFrom: _from, workloadTo: _to, ...earlierVersions } = earlier?.versions ?? {};
  if (earlier)
    log(`resuming ${name}: ${earlier.runs.length} repetitions from commit ${earlier.commit}, ${earlier.date}`);
  for (let i = runs.length + 1; i <= s.repetitions; i++) {
    log(`${s.system}, ${s.workload.workers} workers, repetition ${i}/${s.repetitions}`);
    // After each step the file holds what is measured so far, so a run cut short (N = 1000 takes hours on
    // Cluster API) still leaves its figures, marked incomplete.
    const run = await repetition(s, profileDirOf(name, i), (done) =>
      writeResult(
        name,
        result({ incomplete: { repetition: i, stepsDone: Object.keys(done), steps: done }, runs }),
        false,
      ),
    );
    if (earlier && JSON.stringify(run.versions) !== JSON.stringify(earlierVersions)) {
      throw new Error(
        `--resume: this repetition ran ${JSON.stringify(run.versions)}, the earlier ones ${JSON.stringify(earlierVersions)}; run without --resume`,
      );
    }
    runs.push(run.steps);
    versions = run.versions;
  }
  await writeResult(name, result({ summary: summarise(runs), runs }));
}

runBenchmark(main);
