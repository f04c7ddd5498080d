#!/usr/bin/env node
import { CommanderError } from 'commander';
import { ManifestError } from '../api/manifest-error';
import { RejectedError } from '../client/capt-client';
import { terminalSafe } from '../util/terminal-text';
import { program } from './commands';
import { UsageError } from './read-sources';

/**
 * kubectl spells it `--dry-run=client|server`. capt's dry run asks the running cluster's workflow what it
 * would do, as kubectl's server dry run asks the apiserver: `server` is the same flag, `client` is refused.
 */
function dryRunFlag(arg: string): string {
  const value = /^--dry-run=(.*)$/.exec(arg)?.[1];
  if (value === undefined) return arg;
  if (value === 'server') return '--dry-run';
  throw new UsageError(
    `--dry-run=${value}: capt's dry run asks the running cluster what it would do (as kubectl's --dry-run=server); use --dry-run or --dry-run=server`,
  );
}

/** Runs one command line; its exit code: 0 success, 1 the operation failed, 2 bad input. */
async function run(argv: string[]): Promise<number> {
  let code = 0;
  try {
    await program((c) => (code = c)).parseAsync(argv.map(dryRunFlag), { from: 'user' });
  } catch (err) {
    // Help asked for has been printed (exit 0); help for a command line without a command, too (exit 2).
    if (err instanceof CommanderError) return err.exitCode;
    throw err;
  }
  return code;
}

export async function main(argv = process.argv.slice(2)): Promise<void> {
  const verbose = argv.includes('-v') || argv.includes('--verbose');
  // Ctrl-C during a wait stops the waiting only: the operation is a workflow and goes on.
  process.once('SIGINT', () => {
    process.stderr.write('\nstopped waiting; the operation goes on (capt describe cluster NAME shows it)\n');
    process.exit(130);
  });
  try {
    process.exitCode = await run(argv);
  } catch (err) {
    const e = err as Error;
    const badInput = e instanceof ManifestError || e instanceof UsageError || e instanceof RejectedError;
    process.stderr.write(`error: ${terminalSafe(e.message)}\n`);
    if (verbose && e.stack) process.stderr.write(`${e.stack}\n`);
    process.exitCode = badInput ? 2 : 1;
  }
}

if (require.main === module) void main();
