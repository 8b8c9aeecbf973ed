/**
 * What a BI tool connected as an analyst (docs/roles.sql: a login in the insights_analyst group)
 * lists in the warehouse schema: every table and view it may SELECT, found the way Metabase finds
 * them (information_schema.tables in the schemas it has USAGE on, then a SELECT privilege
 * check). The list is asserted exactly, so a migration that adds or hides a relation changes this
 * test on purpose.
 *
 * The tool's bookkeeping (the migrator's tables, the run log, the ledger, the watermarks, rejects,
 * deliveries, server readings and the locks) is in a schema of its own that analysts cannot use;
 * members of insights_monitor (status, report) list it as well.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bookkeepingSchema } from '../../src/db/bookkeeping.js';
import { BOOKKEEPING_TABLES as BOOKKEEPING } from '../helpers/bookkeeping-tables.js';
import { createRolesDatabase, type RolesDatabase, SCHEMA } from '../reliability/warehouse-roles.js';

/** What analysts query: the API's data and the views made for them. */
const DATA = [
  'ab_test_results',
  'ab_test_versions',
  'ab_tests',
  'daily_activity',
  'day_completeness',
  'expected_allocations',
  'feedback',
  'feedback_enriched',
  'heatmap_versions',
  'heatmaps',
  'key_collisions',
  'missing_upstream',
  'personalization_results',
  'personalization_test_versions',
  'personalization_tests',
  'recordings',
  'sources',
  'survey_answers',
  'survey_answers_enriched',
  'sync_health',
  'test_result_daily',
  'test_result_history',
  'test_results',
  'visitors',
];

describe('what an analyst lists in the warehouse (as Metabase would)', () => {
  let roles: RolesDatabase;

  beforeAll(async () => {
    roles = await createRolesDatabase();
  }, 60_000);
  afterAll(async () => {
    await roles?.drop();
  });

  /** What `role` lists, schema by schema, as Metabase does. */
  const listing = (role: 'analyst' | 'monitor') =>
    sql<{ schema: string; name: string }>`
      select table_schema as schema, table_name as name
        from information_schema.tables
       where table_schema not in ('pg_catalog', 'information_schema')
         and has_schema_privilege(table_schema, 'usage')
         and has_table_privilege(quote_ident(table_schema) || '.' || quote_ident(table_name), 'select')
       order by table_schema, table_name`.execute(roles.as(role).db);

  it('an analyst lists every data table and view, and nothing of the bookkeeping', async () => {
    const listed = await listing('analyst');
    expect(listed.rows.map((r) => r.schema)).toEqual(DATA.map(() => SCHEMA));
    expect(listed.rows.map((r) => r.name)).toEqual(DATA);
    // Read-only: nothing it lists may be written by it.
    const writable = await sql<{ name: string }>`
      select table_name as name from information_schema.tables
       where table_schema = current_schema()
         and has_table_privilege(quote_ident(table_schema) || '.' || quote_ident(table_name),
                                 'insert, update, delete, truncate')`.execute(roles.as('analyst').db);
    expect(writable.rows).toEqual([]);
  });

  it('a member of insights_monitor lists the data and the bookkeeping', async () => {
    const listed = await listing('monitor');
    expect(listed.rows.filter((r) => r.schema === SCHEMA).map((r) => r.name)).toEqual(DATA);
    expect(listed.rows.filter((r) => r.schema === bookkeepingSchema(SCHEMA)).map((r) => r.name)).toEqual(
      BOOKKEEPING,
    );
  });

  it('the data schema holds data only, the bookkeeping schema the rest', async () => {
    const owner = roles.as('owner');
    const all = await sql<{ schema: string; name: string }>`
      select table_schema as schema, table_name as name from information_schema.tables
       where table_schema in (${SCHEMA}, ${bookkeepingSchema(SCHEMA)}) order by table_name`.execute(owner.db);
    expect(all.rows.filter((r) => r.schema === SCHEMA).map((r) => r.name)).toEqual(DATA);
    expect(all.rows.filter((r) => r.schema !== SCHEMA).map((r) => r.name)).toEqual(BOOKKEEPING);
  });
});
