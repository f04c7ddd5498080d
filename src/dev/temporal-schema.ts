import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** How the schema tool reaches PostgreSQL; the password travels in its environment, never on its command line. */
export interface SqlConnection {
  port: number;
  user: string;
  password: string;
}

/** Temporal's two databases and the schema tool's embedded PostgreSQL 12 schemas for them. */
export const temporalDatabases = [
  { database: 'temporal', schema: 'postgresql/v12/temporal' },
  { database: 'temporal_visibility', schema: 'postgresql/v12/visibility' },
] as const;

async function sqlTool(tool: string, conn: SqlConnection, database: string, args: string[]): Promise<void> {
  const env = {
    ...process.env,
    SQL_PLUGIN: 'postgres12',
    SQL_HOST: '127.0.0.1',
    SQL_PORT: String(conn.port),
    SQL_USER: conn.user,
    SQL_PASSWORD: conn.password,
  };
  try {
    await run(tool, ['--db', database, ...args], { env });
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string; message: string };
    const output = `${e.stdout ?? ''}${e.stderr ?? ''}`.trim().split('\n').slice(-10).join('\n');
    throw new Error(
      `Temporal's schema tool failed: ${args.join(' ')} on database ${database}:\n${output || e.message}`,
      { cause: err },
    );
  }
}

/** A new database pair: create-database, setup-schema -v 0.0 (the versioning tables), then every versioned step. */
export async function createTemporalSchema(tool: string, conn: SqlConnection): Promise<void> {
  for (const { database, schema } of temporalDatabases) {
    await sqlTool(tool, conn, database, ['create-database']);
    await sqlTool(tool, conn, database, ['setup-schema', '-v', '0.0']);
    await sqlTool(tool, conn, database, ['update-schema', '--schema-name', schema]);
  }
}

/** The schema steps a newer server brings (none when it is current): run before each server start. */
export async function updateTemporalSchema(tool: string, conn: SqlConnection): Promise<void> {
  for (const { database, schema } of temporalDatabases)
    await sqlTool(tool, conn, database, ['update-schema', '--schema-name', schema]);
}
