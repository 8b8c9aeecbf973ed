import { sql } from 'kysely';
import { expect } from 'vitest';
import { bookkeepingSchema } from '../../src/db/bookkeeping.js';
import type { TestDatabase } from '../helpers/database.js';

/**
 * Every row of every table of the warehouse (the data and the bookkeeping schema) as text (`t::text`: every column, jsonb and
 * text alike), to grep for what must never be stored. With `source`, tables that have a
 * source_id column contribute only that source's rows; the others contribute all of theirs.
 */
export async function everyTextOf(t: TestDatabase, options: { source?: string } = {}): Promise<string> {
  const tables = await sql<{ table_schema: string; table_name: string; has_source: boolean }>`
    select t.table_schema, t.table_name,
           exists (select 1 from information_schema.columns c
                   where c.table_schema = t.table_schema and c.table_name = t.table_name
                     and c.column_name = 'source_id') as has_source
    from information_schema.tables t
    where t.table_schema in (${t.schema}, ${bookkeepingSchema(t.schema)}) and t.table_type = 'BASE TABLE'
    order by t.table_name`.execute(t.db);
  expect(tables.rows.length).toBeGreaterThan(10);
  expect(new Set(tables.rows.map((r) => r.table_schema)).size, 'both schemas').toBe(2);
  const parts: string[] = [];
  for (const { table_schema, table_name, has_source } of tables.rows) {
    const filter =
      options.source !== undefined && has_source ? sql`where source_id = ${options.source}` : sql``;
    const rows = await sql<{
      row: string;
    }>`select r::text as row from ${sql.table(`${table_schema}.${table_name}`)} r ${filter}`.execute(t.db);
    parts.push(`-- ${table_name}`, ...rows.rows.map((r) => r.row));
  }
  return parts.join('\n');
}

/** Rows of the given tables as text, ordered by their primary key: a byte-comparable dump. */
export async function orderedDump(t: TestDatabase, tables: readonly string[]): Promise<string> {
  const parts: string[] = [];
  for (const table of tables) {
    const key = await sql<{ column_name: string }>`
      select a.attname as column_name
      from pg_index i
      join pg_attribute a on a.attrelid = i.indrelid and a.attnum = any(i.indkey)
      where i.indrelid = ${table}::regclass and i.indisprimary
      order by array_position(i.indkey, a.attnum)`.execute(t.db);
    expect(key.rows.length, `primary key of ${table}`).toBeGreaterThan(0);
    const order = sql.join(key.rows.map((r) => sql.ref(`r.${r.column_name}`)));
    const rows = await sql<{
      row: string;
    }>`select r::text as row from ${sql.table(table)} r order by ${order}`.execute(t.db);
    parts.push(`-- ${table} (${rows.rows.length})`, ...rows.rows.map((r) => r.row));
  }
  return parts.join('\n');
}
