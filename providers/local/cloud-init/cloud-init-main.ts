import { spawn } from 'node:child_process';
import { appendFile, chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { commandLine, fileContent, parseCloudConfig } from './cloud-config';
import { metadataPathInMachine } from '../machine-metadata';
import type { MachineMetadata } from '../machine-metadata';

/**
 * cloud-init for a local machine, run inside its sandbox: write_files, then runcmd in order, stopping at
 * the first failing command. The outcome goes to /run/cluster-api/bootstrap-report.json so the provider's
 * sentinel check can say which command failed and what it printed.
 */
const userDataPath = '/var/lib/cloud/instance/user-data.txt';
const reportPath = '/run/cluster-api/bootstrap-report.json';
const outputLog = '/var/log/cloud-init-output.log';

export interface BootstrapReport {
  state: 'running' | 'finished' | 'failed';
  command?: string;
  exitCode?: number;
  output?: string;
}

async function report(r: BootstrapReport): Promise<void> {
  await writeFile(reportPath, JSON.stringify(r));
}

function run(line: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const child = spawn('/bin/sh', ['-c', line], { env: { ...process.env, PATH: `/run/capt/bin:${process.env.PATH}` }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const collect = (chunk: Buffer) => {
      output += chunk.toString();
      void appendFile(outputLog, chunk);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.on('close', (code) => resolve({ code: code ?? 1, output }));
    child.on('error', (err) => resolve({ code: 127, output: err.message }));
  });
}

async function main(): Promise<void> {
  const meta = JSON.parse(await readFile(metadataPathInMachine, 'utf8')) as MachineMetadata & { bootDelaySeconds: number; failBootstrap: boolean };
  // One line per boot: tests use it to prove a machine's bootstrap never ran twice.
  await appendFile('/var/log/capt-boots.log', `${new Date().toISOString()}\n`);
  await report({ state: 'running' });
  await sleep(meta.bootDelaySeconds * 1000);
  if (meta.failBootstrap) {
    return report({ state: 'failed', command: '(boot)', exitCode: 1, output: 'LocalMachineTemplate spec.failBootstrap is set: this machine fails its bootstrap on purpose' });
  }
  const config = parseCloudConfig(await readFile(userDataPath, 'utf8'));
  for (const file of config.write_files ?? []) {
    try {
      await mkdir(dirname(file.path), { recursive: true });
      await writeFile(file.path, fileContent(file), { flag: file.append ? 'a' : 'w' });
      if (file.permissions) await chmod(file.path, parseInt(file.permissions, 8));
    } catch (err) {
      return report({ state: 'failed', command: `write_files ${file.path}`, exitCode: 1, output: (err as Error).message });
    }
  }
  for (const entry of config.runcmd ?? []) {
    const line = commandLine(entry);
    const { code, output } = await run(line);
    if (code !== 0) return report({ state: 'failed', command: line, exitCode: code, output: output.slice(-4000) });
  }
  await report({ state: 'finished' });
}

main().catch(async (err: Error) => {
  await report({ state: 'failed', command: '(cloud-init)', exitCode: 1, output: err.message }).catch(() => undefined);
  process.exitCode = 1;
});
