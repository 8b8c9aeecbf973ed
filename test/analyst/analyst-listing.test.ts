/**
 * What a BI tool connected as an analyst (docs/roles.sql: a login in the insights_analyst group)
 * lists in the warehouse schema: every table and view it may SELECT, found the way Metabase finds
 * them (information_schema.tables, then a SELECT privilege check). The list is asserted exactly,
 * so a migration that adds or hides a relation changes this test on purpose.
 *
 * Today the list holds the tool's bookkeeping too: the migrator's tables, the run log, the ledger,
 * the watermarks, rejects, deliveries, server readings and the locks. Moving them out of the
 * analysts' sight (their own schema) is a later change; this test documents where it starts.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRolesDatabase, type RolesDatabase } from '../reliability/warehouse-roles.js';

/** What analysts query: the API's data and the views made for them. */
const DATA = [
  'ab_test_results',
  'ab_test_versions',
  'ab_tests',
  'daily_activity',
  'feedback',
  'feedback_enriched',
  'heatmap_versions',
  'heatmaps',
  'key_collisions',
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

/** The tool's own state, visible to analysts today. */
const BOOKKEEPING = [
  'kysely_migration',
  'kysely_migration_lock',
  'rejects',
  'run_lock',
  'server_readings',
  'suppressed_visitors',
  'suppression_lock',
  'sync_runs',
  'sync_windows',
  'watermarks',
  'webhook_events',
];

describe('what an analyst lists in the warehouse (as Metabase would)', () => {
  let roles: RolesDatabase;

  beforeAll(async () => {
    roles = await createRolesDatabase();
  }, 60_000);
  afterAll(async () => {
    await roles?.drop();
  });

  it('every table and view of the schema, the bookkeeping included', async () => {
    const analyst = roles.as('analyst');
    const listed = await sql<{ name: string; type: string }>`
      select table_name as name, table_type as type
        from information_schema.tables
       where table_schema = current_schema()
         and has_table_privilege(quote_ident(table_schema) || '.' || quote_ident(table_name), 'select')
       order by table_name`.execute(analyst.db);
    const names = listed.rows.map((r) => r.name);

    expect(names).toEqual([...DATA, ...BOOKKEEPING].sort());
    // Read-only: nothing it lists may be written by it.
    const writable = await sql<{ name: string }>`
      select table_name as name from information_schema.tables
       where table_schema = current_schema()
         and has_table_privilege(quote_ident(table_schema) || '.' || quote_ident(table_name),
                                 'insert, update, delete, truncate')`.execute(analyst.db);
    expect(writable.rows).toEqual([]);
  });

  it('the schema holds nothing the analyst cannot list', async () => {
    const admin = roles.as('owner');
    const all = await sql<{ name: string }>`
      select table_name as name from information_schema.tables
       where table_schema = current_schema() order by table_name`.execute(admin.db);
    expect(all.rows.map((r) => r.name)).toEqual([...DATA, ...BOOKKEEPING].sort());
  });
});
