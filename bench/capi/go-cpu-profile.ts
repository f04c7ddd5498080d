import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import type { StepProfile, StepProfiler } from './scenario';

/** A Go process with net/http/pprof: its name, and a CPU profile (gzipped protobuf) of its next `seconds`, given up after `timeoutMs`. */
export interface GoProfileTarget {
  name: string;
  profile(seconds: number, timeoutMs: number): Promise<Buffer>;
}

interface FunctionMs {
  function: string;
  ms: number;
}

/** One process's profile over a step: CPU time sampled, where it went (self and cumulative), and how it was taken. */
export interface GoProcessProfile {
  sampledMs: number;
  topSelfMs: FunctionMs[];
  topCumulativeMs: FunctionMs[];
  chunks: number;
  failedChunks: number;
  firstFailure?: string;
}

/**
 * pprof's CPU endpoint profiles a fixed number of seconds and cannot be cut short without losing the
 * profile, so a step of unknown length is covered by back-to-back chunks, merged when it ends.
 */
const chunkSeconds = 20;
/** A busy process answers late; a chunk not back this long after it should have ended is counted as failed. */
const chunkTimeoutMs = (chunkSeconds + 30) * 1000;

const msPerUnit: Record<string, number> = { ns: 1e-6, us: 1e-3, ms: 1, s: 1000, mins: 60_000, hrs: 3_600_000, '': 0 };
const toMs = (value: string, unit: string) => Number(value) * (msPerUnit[unit] ?? Number.NaN);

const pprof = async (args: string[]) =>
  (await promisify(execFile)('go', ['tool', 'pprof', ...args], { maxBuffer: 64 << 20, encoding: 'buffer' })).stdout;

/** `go tool pprof -top` over the merged chunks: the sampled total and the `count` largest rows, by self or cumulative time. */
async function top(
  files: string[],
  by: 'self' | 'cumulative',
  count: number,
): Promise<{ sampledMs: number; rows: FunctionMs[] }> {
  const out = (
    await pprof(['-top', `-nodecount=${count}`, ...(by === 'cumulative' ? ['-cum'] : []), ...files])
  ).toString('utf8');
  const total = /Total samples = ([\d.]+)([a-z]*)/.exec(out);
  if (!total) throw new Error(`go tool pprof printed no total for ${files.length} profiles:\n${out.slice(0, 500)}`);
  const rows = [...out.matchAll(/^\s*([\d.]+)([a-z]*)\s+[\d.]+%\s+[\d.]+%\s+([\d.]+)([a-z]*)\s+[\d.]+%\s+(.+)$/gm)].map(
    (r) => ({
      function: r[5]!.trim(),
      ms: Math.round(by === 'self' ? toMs(r[1]!, r[2]!) : toMs(r[3]!, r[4]!)),
    }),
  );
  return { sampledMs: Math.round(toMs(total[1]!, total[2]!)), rows };
}

interface Collection {
  step: string;
  stopped: boolean;
  dir: string;
  files: Map<string, string[]>;
  failures: Map<string, string[]>;
  loops: Promise<void>[];
}

/** Chunk after chunk of `target`'s profile until the step is over; a failed chunk is counted, not fatal, so a long run keeps its figures. */
async function collect(target: GoProfileTarget, c: Collection): Promise<void> {
  for (let i = 0; !c.stopped; i++) {
    try {
      const file = join(c.dir, `${target.name}-${i}.pb.gz`);
      await writeFile(file, await target.profile(chunkSeconds, chunkTimeoutMs));
      c.files.get(target.name)!.push(file);
    } catch (err) {
      c.failures.get(target.name)!.push(err instanceof Error ? err.message : String(err));
      await sleep(1000);
    }
  }
}

async function summarise(c: Collection, target: string, keepDir: string | undefined): Promise<GoProcessProfile> {
  const files = c.files.get(target)!;
  const failures = c.failures.get(target)!;
  const base = {
    chunks: files.length,
    failedChunks: failures.length,
    ...(failures[0] ? { firstFailure: failures[0] } : {}),
  };
  if (files.length === 0) return { sampledMs: 0, topSelfMs: [], topCumulativeMs: [], ...base };
  const self = await top(files, 'self', 12);
  const cumulative = await top(files, 'cumulative', 30);
  if (keepDir) {
    await mkdir(keepDir, { recursive: true });
    await writeFile(join(keepDir, `${c.step}-${target}.pb.gz`), await pprof(['-proto', ...files]));
  }
  return { sampledMs: self.sampledMs, topSelfMs: self.rows, topCumulativeMs: cumulative.rows, ...base };
}

const describe = (byProcess: Record<string, GoProcessProfile>) =>
  Object.entries(byProcess)
    .map(
      ([name, p]) =>
        `${name} ${(p.sampledMs / 1000).toFixed(0)} s sampled${p.failedChunks ? ` (${p.failedChunks} chunks failed)` : ''}, top self: ${p.topSelfMs
          .slice(0, 3)
          .map((f) => `${f.function} ${(f.ms / 1000).toFixed(1)} s`)
          .join(', ')}`,
    )
    .join('; ');

/**
 * CPU profiles of Go processes (Cluster API's managers, the management apiserver) over the named steps,
 * reduced per process to the largest self and cumulative times; with `keepDir`, each step's merged
 * profile per process is kept there as <step>-<process>.pb.gz for `go tool pprof`.
 */
export function goStepProfiler(
  steps: readonly string[],
  targets: GoProfileTarget[],
  keepDir?: string,
): StepProfiler & { dispose(): Promise<void> } {
  let current: Collection | undefined;
  const dirs: string[] = [];
  return {
    async start(step) {
      if (!steps.includes(step)) return;
      const dir = await mkdtemp(join(tmpdir(), 'capi-bench-profile-'));
      dirs.push(dir);
      const c: Collection = {
        step,
        stopped: false,
        dir,
        loops: [],
        files: new Map(targets.map((t) => [t.name, []])),
        failures: new Map(targets.map((t) => [t.name, []])),
      };
      c.loops = targets.map((t) => collect(t, c));
      current = c;
    },
    async stop(step): Promise<StepProfile | undefined> {
      const c = current;
      if (!c || c.step !== step) return undefined;
      current = undefined;
      c.stopped = true;
      await Promise.all(c.loops);
      const byProcess: Record<string, GoProcessProfile> = {};
      for (const t of targets) byProcess[t.name] = await summarise(c, t.name, keepDir);
      await rm(c.dir, { recursive: true, force: true });
      return { summary: { chunkSeconds, byProcess }, line: `CPU profile: ${describe(byProcess)}` };
    },
    async dispose() {
      if (current) current.stopped = true;
      await Promise.all(current?.loops ?? []);
      await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
    },
  };
}
