/**
 * The database's CHECK constraints that list resource names say what the registry says
 * (src/schemas/resource-names.ts): a resource added to the registry, or a migration that lists
 * the resources by hand and misses one, fails here, not in production with an insert refused.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bookkeepingSchema } from '../../src/db/bookkeeping.js';
import { ALL_RESOURCES, WINDOWED_RESOURCES } from '../../src/schemas/resource-names.js';
import { TEST_KINDS } from '../../src/schemas/test.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/** What each constrained column may hold, by the code's lists. */
const EXPECTED_BY_COLUMN: Record<string, readonly string[]> = {
  resource: WINDOWED_RESOURCES,
  test_kind: TEST_KINDS,
};

/** Tables whose column holds more than its default list: the inventory covers snapshots too. */
const EXPECTED_BY_TABLE_COLUMN: Record<string, readonly string[]> = {
  'schema_drift.resource': ALL_RESOURCES,
  'schema_drift_turns.resource': ALL_RESOURCES,
};

/**
 * Columns named `resource` with no CHECK, and why: rejects holds an endpoint's name (a test's
 * detail is `abtesting/detail`), queue_run_checks only what a worker wrote from a planned window.
 */
const FREE_RESOURCE_COLUMNS = ['queue_run_checks', 'rejects'];

/** The quoted literals of a constraint's definition, e.g. `resource = ANY (ARRAY['feedback'::text, ...])`. */
function literalsOf(definition: string): string[] {
  return [...definition.matchAll(/'((?:[^']|'')*)'/g)].map((m) => (m[1] ?? '').replaceAll("''", "'"));
}

interface Check {
  table: string;
  name: string;
  columns: string[];
  definition: string;
}

describe('the CHECK constraints on resource names', () => {
  let t: TestDatabase;
  let checks: Check[];
  let resourceColumns: string[];
  beforeAll(async () => {
    t = await createTestDatabase();
    const schemas = [t.schema, bookkeepingSchema(t.schema)];
    ({ rows: checks } = await sql<Check>`
      select c.relname as table, con.conname as name,
             array(select a.attname::text from pg_attribute a
                    where a.attrelid = c.oid and a.attnum = any(con.conkey) order by a.attname) as columns,
             pg_get_constraintdef(con.oid) as definition
        from pg_constraint con
        join pg_class c on c.oid = con.conrelid
        join pg_namespace n on n.oid = c.relnamespace
       where con.contype = 'c' and n.nspname = any(${schemas}::text[])
       order by 1, 2`.execute(t.db));
    const { rows } = await sql<{ table: string }>`
      select table_name::text as table from information_schema.columns
       where column_name = 'resource' and table_schema = any(${schemas}::text[])
         and table_name in (select table_name from information_schema.tables
                             where table_type = 'BASE TABLE' and table_schema = any(${schemas}::text[]))
       order by 1`.execute(t.db);
    resourceColumns = rows.map((r) => r.table);
  });
  afterAll(() => t.drop());

  const listingResources = () =>
    checks.filter((c) =>
      literalsOf(c.definition).some((l) => (ALL_RESOURCES as readonly string[]).includes(l)),
    );

  it('each lists exactly the resources the code allows in its column', () => {
    const listing = listingResources();
    expect(listing.length).toBeGreaterThan(0);
    const columnOf = (c: Check) => (c.columns.length === 1 ? (c.columns[0] ?? '') : c.columns.join(','));
    expect(
      listing.map((c) => ({ check: `${c.table}.${c.name}`, names: literalsOf(c.definition).sort() })),
    ).toEqual(
      listing.map((c) => ({
        check: `${c.table}.${c.name}`,
        names: [
          ...(EXPECTED_BY_TABLE_COLUMN[`${c.table}.${columnOf(c)}`] ??
            EXPECTED_BY_COLUMN[columnOf(c)] ?? [`(no list in the code for column ${columnOf(c)})`]),
        ].sort(),
      })),
    );
  });

  it('every table with a resource column constrains it, but the two that hold other names', () => {
    const constrained = new Set(
      listingResources()
        .filter((c) => c.columns.length === 1 && c.columns[0] === 'resource')
        .map((c) => c.table),
    );
    expect(resourceColumns.filter((table) => !constrained.has(table))).toEqual(FREE_RESOURCE_COLUMNS);
    expect([...constrained].sort()).toEqual([
      'key_collisions',
      'late_arrivals',
      'reading_changes',
      'schema_drift',
      'schema_drift_turns',
      'server_readings',
      'sync_windows',
      'watermarks',
    ]);
  });
});

describe('literalsOf', () => {
  it('reads the names of an IN list as PostgreSQL prints it', () => {
    expect(
      literalsOf("CHECK ((resource = ANY (ARRAY['feedback'::text, 'survey'::text, 'it''s'::text])))"),
    ).toEqual(['feedback', 'survey', "it's"]);
  });
});
