import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { captHome } from '../config/capt-home';
import { devServerSearchAttributeArgs } from '../contract/search-attributes';
import { devServerDynamicConfigArgs } from './dev-server-options';
import { toolPaths } from '../tools';
import { isListening } from '../util/listening';
import { logTail, runningPid, startDetached, stopProcess } from '../util/processes';

/**
 * The embedded stack for `capt dev`: a Temporal dev server (SQLite under CAPT_HOME/dev, Web UI) and a
 * capt worker, both in the background. Stopping it stops neither clusters nor machines.
 */
export interface DevStackOptions {
  port?: number;
  uiPort?: number;
}

export const devDir = () => join(captHome(), 'dev');

const listening = (port: number) => isListening('127.0.0.1', port);

export interface DevStatus {
  temporal?: number;
  worker?: number;
  address: string;
  ui: string;
  database: string;
}

/** Ports from CAPT_DEV_PORT / CAPT_DEV_UI_PORT, else Temporal's usual 7233 and 8233. */
export function devPorts(): Required<DevStackOptions> {
  return { port: Number(process.env.CAPT_DEV_PORT ?? 7233), uiPort: Number(process.env.CAPT_DEV_UI_PORT ?? 8233) };
}

export async function devStatus(opts: DevStackOptions = devPorts()): Promise<DevStatus> {
  return {
    temporal: await runningPid(devDir(), 'temporal'), worker: await runningPid(devDir(), 'worker'),
    address: `127.0.0.1:${opts.port ?? 7233}`, ui: `http://127.0.0.1:${opts.uiPort ?? 8233}`, database: join(devDir(), 'temporal.db'),
  };
}

export async function devStart(opts: DevStackOptions = devPorts(), onStep: (line: string) => void = () => undefined): Promise<DevStatus> {
  const port = opts.port ?? 7233;
  const uiPort = opts.uiPort ?? 8233;
  if (!(await runningPid(devDir(), 'temporal'))) {
    if (await listening(port)) throw new Error(`port ${port} is already in use by another program; stop it or pass --port`);
    onStep(`starting the Temporal dev server on 127.0.0.1:${port} (Web UI on ${uiPort})`);
    await startDetached({
      name: 'temporal', command: toolPaths().temporal, stateDir: devDir(),
      args: ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port), '--ui-port', String(uiPort), '--db-filename', join(devDir(), 'temporal.db'), '--log-level', 'warn', ...devServerSearchAttributeArgs(), ...devServerDynamicConfigArgs()],
    });
  }
  for (let i = 0; !(await listening(port)); i++) {
    if (i > 120 || !(await runningPid(devDir(), 'temporal'))) throw new Error(`the Temporal dev server did not start:\n${await logTail(devDir(), 'temporal')}`);
    await sleep(250);
  }
  if (!(await runningPid(devDir(), 'worker'))) {
    onStep('starting a capt worker');
    await startDetached({
      name: 'worker', command: process.execPath, args: [join(__dirname, '../worker/worker-main.js')], stateDir: devDir(),
      env: { TEMPORAL_ADDRESS: `127.0.0.1:${port}`, CAPT_HOME: captHome() },
    });
    for (let i = 0; !(await readFile(join(devDir(), 'worker.log'), 'utf8').catch(() => '')).includes('capt worker ready'); i++) {
      if (i > 240 || !(await runningPid(devDir(), 'worker'))) throw new Error(`the capt worker did not start:\n${await logTail(devDir(), 'worker')}`);
      await sleep(250);
    }
  }
  return devStatus(opts);
}

export async function devStop(): Promise<void> {
  await stopProcess(devDir(), 'worker', 15_000);
  await stopProcess(devDir(), 'temporal', 15_000);
}
