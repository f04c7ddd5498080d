import { access, mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { profilerSignal } from './profiler-signal';
import type { StepProfile, StepProfiler } from './scenario';

/** A step's CPU profile of the capt worker, reduced: each thread's busy time and the ten largest self times. */
export interface CpuProfileSummary {
  busyMsByThread: Record<string, number>;
  topSelfMs: { function: string; ms: number }[];
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
}

const preload = join(__dirname, 'worker-cpu-profiler.js');

const frameName = (f: ProfileNode['callFrame']) =>
  f.url ? `${f.functionName || '(anonymous)'} ${basename(f.url)}:${f.lineNumber + 1}` : f.functionName;

/** Self time per function over every thread's profile, idle excluded (each sample stands for the profile's mean interval). */
export function summariseProfiles(profiles: [thread: string, profile: Profile][]): CpuProfileSummary {
  const busyMsByThread: Record<string, number> = {};
  const selfMs = new Map<string, number>();
  for (const [thread, p] of profiles) {
    const msPerSample = p.samples.length ? (p.endTime - p.startTime) / 1000 / p.samples.length : 0;
    const names = new Map(p.nodes.map((n) => [n.id, frameName(n.callFrame)]));
    let busy = 0;
    for (const id of p.samples) {
      const name = names.get(id) ?? '(unknown)';
      if (name === '(idle)') continue;
      busy += msPerSample;
      selfMs.set(name, (selfMs.get(name) ?? 0) + msPerSample);
    }
    busyMsByThread[thread] = Math.round(busy);
  }
  const topSelfMs = [...selfMs]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 10)
    .map(([fn, ms]) => ({ function: fn, ms: Math.round(ms) }));
  return { busyMsByThread, topSelfMs };
}

export interface WorkerStepProfiler extends StepProfiler {
  /** The environment to start the worker with: worker-cpu-profiler.js preloaded, writing into a folder of this profiler's. */
  env: Record<string, string>;
  dispose(): Promise<void>;
}

/** A CPU profile of the capt worker for each of `steps`: profilerSignal starts and stops the preloaded profiler. */
export async function workerStepProfiler(
  steps: readonly string[],
  workerPid: () => number,
): Promise<WorkerStepProfiler> {
  const dir = await mkdtemp(join(tmpdir(), 'capt-bench-profile-'));
  let runs = 0;
  return {
    env: { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require ${preload}`.trim(), CAPT_BENCH_PROFILE_DIR: dir },
    async start(name) {
      if (steps.includes(name)) process.kill(workerPid(), profilerSignal);
    },
    async stop(name): Promise<StepProfile | undefined> {
      if (!steps.includes(name)) return undefined;
      process.kill(workerPid(), profilerSignal);
      runs += 1;
      const done = join(dir, `${runs}.done`);
      for (
        let waited = 0;
        !(await access(done).then(
          () => true,
          () => false,
        ));
        waited += 200
      ) {
        if (waited > 60_000) throw new Error(`the worker wrote no CPU profile into ${dir} within 60 s`);
        await sleep(200);
      }
      const files = (await readdir(dir)).filter((f) => f.startsWith(`${runs}-`) && f.endsWith('.cpuprofile'));
      const profiles = await Promise.all(
        files.map(async (f): Promise<[string, Profile]> => [
          f.slice(`${runs}-`.length, -'.cpuprofile'.length),
          JSON.parse(await readFile(join(dir, f), 'utf8')) as Profile,
        ]),
      );
      const summary = summariseProfiles(profiles);
      const topFive = summary.topSelfMs
        .slice(0, 5)
        .map((f) => `${f.function} ${f.ms} ms`)
        .join(', ');
      return {
        summary,
        line: `worker CPU profile, busy ms ${JSON.stringify(summary.busyMsByThread)}; top self time: ${topFive}`,
      };
    },
    dispose: () => rm(dir, { recursive: true, force: true }),
  };
}
