import { execFileSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';

const root = join(__dirname, '../..');

const git = (...args: string[]) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();

/**
 * What every result records first: when, at which commit, on what machine. A run of changes not yet committed says
 * so (`+uncommitted`), since its commit alone would name code that did not run; results written by earlier runs do not
 * count.
 */
export function resultHeader(): Record<string, unknown> {
  const uncommitted = git('status', '--porcelain', '--untracked-files=no', '--', '.', ':!bench/results') !== '';
  return {
    date: new Date().toISOString(),
    commit: `${git('rev-parse', '--short', 'HEAD')}${uncommitted ? '+uncommitted' : ''}`,
    machine: { cpu: cpus()[0]?.model, cores: cpus().length, memoryGiB: Math.round(totalmem() / 2 ** 30) },
  };
}

/** Where the result called `name` is kept. */
export const resultPath = (name: string) => join(root, 'bench/results', `${name}.json`);

/** Where a run's raw profiles are kept, beside its result: one folder per repetition. */
export const profileDir = (name: string, repetition: number) =>
  join(root, 'bench/results/profiles', name, `repetition-${repetition}`);

/** Writes the result to bench/results/<name>.json, and prints it unless `print` is false. */
export async function writeResult(name: string, result: Record<string, unknown>, print = true): Promise<void> {
  if (print) console.log(JSON.stringify(result, null, 2));
  await writeFile(resultPath(name), `${JSON.stringify(result, null, 2)}\n`);
}

/** The result written earlier as bench/results/<name>.json. */
export async function readResult(name: string): Promise<unknown> {
  return JSON.parse(await readFile(resultPath(name), 'utf8'));
}

/** Runs a benchmark's main; a failure prints and sets the exit code. */
export function runBenchmark(main: () => Promise<void>): void {
  main().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
