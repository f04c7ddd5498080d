import { execFile } from 'node:child_process';
import { access, chmod, chown, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { logTail, runningPid, startDetached, stopProcess } from '../util/processes';

const run = promisify(execFile);

/**
 * A PostgreSQL server from Debian's package, for the production topology. PostgreSQL refuses to run as
 * root, so a root capt runs it as the package's `postgres` user, and its directory lives outside root's
 * home (which that user cannot enter), where a reboot keeps it: chosen by the caller (postgresDataHome).
 */
export interface PostgresServer {
  /** Debian's binaries: postgres, initdb, pg_isready. */
  bin: string;
  /** The server's own directory (owned by the user it runs as); the cluster is in `data` under it. */
  home: string;
  port: number;
  /** The superuser initdb creates, whom Temporal and its schema tool connect as. */
  user: string;
  password: string;
  /** Where its pid record and log live (stopProcess / runningPid key). */
  stateDir: string;
}

export const postgresProcess = 'postgres';

interface OsUser {
  uid: number;
  gid: number;
}

/** Whom PostgreSQL runs as: this process's own user, or `postgres` when that is root. */
async function runAs(): Promise<OsUser | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const passwd = await readFile('/etc/passwd', 'utf8');
  const fields = passwd
    .split('\n')
    .map((line) => line.split(':'))
    .find((f) => f[0] === 'postgres');
  if (!fields) {
    throw new Error(
      "PostgreSQL refuses to run as root and this host has no `postgres` user: install Debian's postgresql package (apt-get install postgresql), or run capt as an unprivileged user",
    );
  }
  return { uid: Number(fields[2]), gid: Number(fields[3]) };
}

/** `command args` as `user`: setpriv execs in place, so a recorded pid is the command's own. */
function asUser(user: OsUser | undefined, command: string, args: string[]): [string, string[]] {
  if (!user) return [command, args];
  return [
    'setpriv',
    ['--reuid', String(user.uid), '--regid', String(user.gid), '--clear-groups', '--', command, ...args],
  ];
}

const dataDir = (pg: PostgresServer) => join(pg.home, 'data');

/** Creates the database cluster unless `home` holds one; the superuser's password goes through a file initdb reads and deletes. */
export async function initPostgres(pg: PostgresServer): Promise<void> {
  if (
    await access(join(dataDir(pg), 'PG_VERSION')).then(
      () => true,
      () => false,
    )
  )
    return;
  const user = await runAs();
  await mkdir(pg.home, { recursive: true, mode: 0o700 });
  await rm(dataDir(pg), { recursive: true, force: true });
  const passwordFile = join(pg.home, 'initdb-password');
  await writeFile(passwordFile, pg.password, { mode: 0o600 });
  if (user) {
    await chown(pg.home, user.uid, user.gid);
    await chown(passwordFile, user.uid, user.gid);
  }
  const [command, args] = asUser(user, join(pg.bin, 'initdb'), [
    '--pgdata',
    dataDir(pg),
    '--username',
    pg.user,
    '--pwfile',
    passwordFile,
    '--auth-host',
    'scram-sha-256',
    '--auth-local',
    'peer',
    '--encoding',
    'UTF8',
    '--locale',
    'C',
    '--no-instructions',
  ]);
  try {
    await run(command, args, { cwd: pg.home });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`initdb of ${dataDir(pg)} failed: ${e.stderr?.trim() || e.message}`, { cause: err });
  } finally {
    await rm(passwordFile, { force: true });
  }
  await chmod(pg.home, 0o700);
}

/** Starts the server (get-or-start) on 127.0.0.1:`port`, TCP only, and waits until it accepts connections. */
export async function startPostgres(pg: PostgresServer): Promise<void> {
  if (!(await runningPid(pg.stateDir, postgresProcess))) {
    const [command, args] = asUser(await runAs(), join(pg.bin, 'postgres'), [
      '-D',
      dataDir(pg),
      '-p',
      String(pg.port),
      '-c',
      'listen_addresses=127.0.0.1',
      // No unix socket: two servers of different capt homes must not meet in /var/run/postgresql.
      '-c',
      'unix_socket_directories=',
      // Temporal opens a pool per service and store (four services, two stores).
      '-c',
      'max_connections=200',
      // Commits stay synchronous (PostgreSQL's default): with synchronous_commit=off a killed PostgreSQL loses
      // commits it had acknowledged, and Temporal then holds an activity scheduled whose task and timers are gone.
    ]);
    await startDetached({ name: postgresProcess, command, args, stateDir: pg.stateDir, cwd: pg.home });
  }
  const isReady = join(pg.bin, 'pg_isready');
  for (let i = 0; ; i++) {
    if (
      await run(isReady, ['-h', '127.0.0.1', '-p', String(pg.port), '-t', '1']).then(
        () => true,
        () => false,
      )
    )
      return;
    // Recovery after a kill replays the WAL first: give it a minute.
    if (i > 240 || !(await runningPid(pg.stateDir, postgresProcess))) {
      throw new Error(
        `PostgreSQL did not start on 127.0.0.1:${pg.port}:\n${await logTail(pg.stateDir, postgresProcess)}`,
      );
    }
    await sleep(250);
  }
}

/** A smart shutdown (SIGTERM): sessions end first; Temporal should be stopped before. */
export function stopPostgres(stateDir: string): Promise<void> {
  return stopProcess(stateDir, postgresProcess, 30_000);
}
