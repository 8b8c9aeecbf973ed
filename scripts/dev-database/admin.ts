import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';

/** SQLSTATE 55006: CREATE DATABASE ... TEMPLATE while someone is still connected to the template. */
const OBJECT_IN_USE = '55006';

/** The same server and credentials as `url`, another database. */
export function databaseUrl(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${encodeURIComponent(database)}`;
  return parsed.toString();
}

/** Opens one connection for `fn` and always closes it. */
export async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, application_name: 'insights-sync-tests' });
  // A server-side disconnect while idle must not crash the test process.
  client.on('error', () => {});
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export async function createDatabase(admin: pg.Client, name: string, template?: string): Promise<void> {
  const statement = `create database ${admin.escapeIdentifier(name)}${
    template === undefined ? '' : ` template ${admin.escapeIdentifier(template)}`
  }`;
  // Another backend may still be leaving the template (a pool closing, autovacuum): retry briefly.
  for (let attempt = 1; ; attempt++) {
    try {
      await admin.query(statement);
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== OBJECT_IN_USE || attempt >= 20) throw error;
      await sleep(100 * attempt);
    }
  }
}

/** Drops the database even if connections are still open (they are terminated). */
export async function dropDatabase(admin: pg.Client, name: string): Promise<void> {
  const id = admin.escapeIdentifier(name);
  const version = Number((await admin.query<{ v: string }>('show server_version_num')).rows[0]?.v ?? 0);
  if (version >= 130000) {
    await admin.query(`drop database if exists ${id} with (force)`);
    return;
  }
  await admin.query(`alter database ${id} with allow_connections false`).catch(() => {});
  await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1', [name]);
  await admin.query(`drop database if exists ${id}`);
}

/** Names of the databases starting with `prefix` (taken literally, not as a LIKE pattern). */
export async function databasesStartingWith(admin: pg.Client, prefix: string): Promise<string[]> {
  const result = await admin.query<{ datname: string }>(
    'select datname from pg_database where left(datname, length($1)) = $1 order by datname',
    [prefix],
  );
  return result.rows.map((row) => row.datname);
}
