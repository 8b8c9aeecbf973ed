import { sql } from 'kysely';
import { type Migration, Migrator } from 'kysely/migration';
import { migrations } from '../../migrations/index.js';
import { bookkeepingSchema } from '../../src/db/bookkeeping.js';
import type { TestDatabase } from './database.js';

/** A migrator over the project's migrations, on a test database: to step down and up again. */
export function testMigrator(t: TestDatabase): Migrator {
  return new Migrator({
    db: t.db,
    provider: { getMigrations: async (): Promise<Record<string, Migration>> => migrations },
    migrationTableSchema: bookkeepingSchema(t.schema),
  });
}

/** The window merge functions as the database holds them: definition and rights, by name. */
export async function mergeFunctionDefinitions(
  t: TestDatabase,
): Promise<{ name: string; def: string; acl: string | null }[]> {
  const { rows } = await sql<{ name: string; def: string; acl: string | null }>`
    select p.proname as name, pg_get_functiondef(p.oid) as def, p.proacl::text as acl
      from pg_proc p join pg_namespace n on n.oid = p.pronamespace
     where n.nspname = ${bookkeepingSchema(t.schema)} and p.proname like 'merge_window_%'
     order by p.proname`.execute(t.db);
  return rows;
}
