import { commandLine, fileContent, parseCloudConfig } from './cloud-config';

/**
 * cloud-init for a local machine as one POSIX shell script, rendered by the provider from the user-data
 * (as cloud-init itself renders runcmd into a script) and run inside the machine's sandbox: write_files,
 * then runcmd in order, stopping at the first failing step. A node process per machine for this cost
 * ~0.1 s of CPU; the shell needs a few milliseconds.
 *
 * The outcome goes to /run/cluster-api/bootstrap-report.json, and the failed step's output to
 * `stepOutputInMachine`, so the provider's sentinel check can say which step failed and what it printed.
 */
export const scriptInMachine = '/var/lib/cloud/instance/cloud-init.sh';
export const reportInMachine = '/run/cluster-api/bootstrap-report.json';
export const stepOutputInMachine = '/run/capt/cloud-init-step.log';
const outputLog = '/var/log/cloud-init-output.log';

export interface BootstrapReport {
  state: 'running' | 'finished' | 'failed';
  command?: string;
  exitCode?: number;
}

/** A shell word that stands for `s` exactly. */
export const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** One step: its report if it fails (exitCode added by the script), then the command that runs it. */
const step = (command: string, run: string) =>
  `step ${shellQuote(JSON.stringify({ state: 'failed', command }).slice(0, -1))} ${run}`;
const failing = (command: string, message: string) => step(command, `fail ${shellQuote(message)}`);

function steps(userData: string): string[] {
  let config;
  try {
    config = parseCloudConfig(userData);
  } catch (err) {
    return [failing('(cloud-init)', (err as Error).message)];
  }
  const out: string[] = [];
  for (const file of config.write_files ?? []) {
    let content: Buffer;
    try {
      content = fileContent(file);
    } catch (err) {
      out.push(failing(`write_files ${file.path}`, (err as Error).message));
      continue;
    }
    // base64 has no quote or newline, so no content can end the here-document early.
    out.push(
      `${step(`write_files ${file.path}`, `write_file ${shellQuote(file.path)} ${shellQuote(file.permissions ?? '')} ${file.append ? 'append' : 'replace'}`)} <<'EOF'\n${content.toString('base64')}\nEOF`,
    );
  }
  for (const entry of config.runcmd ?? []) {
    const line = commandLine(entry);
    out.push(step(line, `/bin/sh -c ${shellQuote(line)}`));
  }
  return out;
}

export function renderCloudInitScript(
  userData: string,
  machine: { bootDelaySeconds: number; failBootstrap: boolean },
): string {
  const body = machine.failBootstrap
    ? [failing('(boot)', 'LocalMachineTemplate spec.failBootstrap is set: this machine fails its bootstrap on purpose')]
    : steps(userData);
  return `#!/bin/sh
export PATH="/run/capt/bin:$PATH"
report() { printf '%s' "$1" > ${reportInMachine}; }
# step REPORT COMMAND...: COMMAND's output goes to the log and, for the report, to ${stepOutputInMachine}.
step() {
  r=$1; shift
  "$@" > ${stepOutputInMachine} 2>&1
  c=$?
  cat ${stepOutputInMachine} >> ${outputLog}
  [ $c = 0 ] && return
  report "$r,\\"exitCode\\":$c}"
  exit 0
}
fail() { printf '%s\\n' "$1"; return 1; }
# write_file PATH MODE append|replace, base64 content on stdin. A replaced file is created afresh under
# umask 077, so a key is never readable by others while it is written; then it gets MODE (cloud-init's 0644 by default).
write_file() {
  case $1 in */*) d=\${1%/*} ;; *) d= ;; esac
  if [ -n "$d" ] && [ ! -d "$d" ]; then mkdir -p "$d" || return; fi
  if [ "$3" = append ]; then (umask 077; base64 -d >> "$1"); else rm -f "$1" && (umask 077; base64 -d > "$1"); fi || return
  chmod "\${2:-0644}" "$1"
}
# One line per boot: tests use it to prove a machine's bootstrap never ran twice.
date -u +%Y-%m-%dT%H:%M:%S.%3NZ >> /var/log/capt-boots.log
report '{"state":"running"}'
${machine.bootDelaySeconds > 0 ? `sleep ${Number(machine.bootDelaySeconds)}\n` : ''}${body.join('\n')}
report '{"state":"finished"}'
`;
}
