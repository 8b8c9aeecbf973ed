/**
 * An analyst's BI tool (Metabase, dbt) connects with the server's default search_path, which does
 * not name the warehouse schema: every view of the data schema reads whole from such a
 * connection, and no function of the warehouse depends on the caller's search_path. Views are
 * listed from the catalog, so a view a later migration adds is covered without touching this file.
 */
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bookkeepingSchema } from '../../src/db/bookkeeping.js';
import { createRolesDatabase, type RolesDatabase, SCHEMA } from '../reliability/warehouse-roles.js';

describe('the warehouse from a connection whose search_path does not name it', () => {
  let roles: RolesDatabase;
  let analyst: pg.Client;

  beforeAll(async () => {
    roles = await createRolesDatabase();
    await seedTestResults(roles);
    analyst = new pg.Client({ connectionString: roles.url.analyst });
    await analyst.connect();
  }, 60_000);
  afterAll(async () => {
    await analyst?.end();
    await roles?.drop();
  });

  it('the analyst login has the server default search_path, without the warehouse schema', async () => {
    const { rows } = await analyst.query<{ search_path: string }>('show search_path');
    expect(rows[0]?.search_path).not.toContain(SCHEMA);
  });

  it('a member of the analyst role reads every column of every view of the data schema', async () => {
    const { rows: views } = await analyst.query<{ view: string; columns: string[] }>(
      `select c.relname as view, array_agg(quote_ident(a.attname) order by a.attnum) as columns
         from pg_class c
         join pg_namespace n on n.oid = c.relnamespace
         join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
        where n.nspname = $1 and c.relkind in ('v', 'm')
        group by c.relname order by c.relname`,
      [SCHEMA],
    );
    expect(views.map((v) => v.view)).toContain('ab_test_results');
    const failures: string[] = [];
    const counts = new Map<string, number>();
    for (const { view, columns } of views) {
      try {
        const read = await analyst.query(
          `select ${columns.join(', ')} from ${pg.escapeIdentifier(SCHEMA)}.${pg.escapeIdentifier(view)}`,
        );
        counts.set(view, read.rowCount ?? 0);
      } catch (error) {
        failures.push(`${view}: ${(error as Error).message}`);
      }
    }
    expect(failures).toEqual([]);
    // The test results views ran their statistics functions on rows, not on an empty table.
    expect(counts.get('ab_test_results')).toBe(2);
    expect(counts.get('personalization_results')).toBe(3);
  });

  it('the sample-ratio check of the results views answers from that connection', async () => {
    const { rows } = await analyst.query<{ srm_p_value: number | null }>(
      `select srm_p_value from ${SCHEMA}.ab_test_results order by variant`,
    );
    expect(rows.map((r) => r.srm_p_value)).toHaveLength(2);
    for (const row of rows) expect(row.srm_p_value).toBeGreaterThan(0);
  });

  it('every function of the data and bookkeeping schemas pins its own search_path', async () => {
    const owner = roles.as('owner');
    const { rows } = await sql<{ name: string; config: string[] | null }>`
      select n.nspname || '.' || p.proname as name, p.proconfig as config
        from pg_proc p join pg_namespace n on n.oid = p.pronamespace
       where n.nspname in (${SCHEMA}, ${bookkeepingSchema(SCHEMA)})
       order by 1`.execute(owner.db);
    expect(rows.length).toBeGreaterThanOrEqual(6);
    const unpinned = rows
      .filter((r) => !(r.config ?? []).some((c) => c.startsWith('search_path=')))
      .map((r) => r.name);
    expect(unpinned).toEqual([]);
  });

  it('the key-collision trigger still sets a moved item aside, whatever the writer search_path', async () => {
    const owner = new pg.Client({ connectionString: roles.url.owner });
    await owner.connect();
    try {
      const feedback = `${pg.escapeIdentifier(SCHEMA)}.feedback`;
      await owner.query(
        `insert into ${feedback} (source_id, id, feedback_id, question, session, comment, rating, rating_text, dt, url, screenshot, raw)
         values ('main', 1, 2, 'Q', 's', '', 5, 'five', '2026-01-01T10:00:00Z', 'https://x', '', '{}')`,
      );
      await owner.query(`update ${feedback} set dt = '2026-01-02T10:00:00Z' where id = 1`);
      const { rows } = await owner.query<{ item_key: string }>(
        `select item_key from ${pg.escapeIdentifier(SCHEMA)}.key_collisions`,
      );
      expect(rows.map((r) => r.item_key)).toEqual(['1/2']);
    } finally {
      await owner.end();
    }
  });
});

/** Two A/B variants (one degree of freedom: the odd-df path) and three personalization variants (even). */
async function seedTestResults(roles: RolesDatabase): Promise<void> {
  const owner = roles.as('owner');
  await sql`insert into sources (source_id, base_url) values ('main', 'https://insights.example')`.execute(
    owner.db,
  );
  // An equal split declared, so the sample-ratio check (chi_square_p_value) runs.
  await sql`insert into expected_allocations (source_id, test_id, variant, weight) values ('main', '*', '*', 1)`.execute(
    owner.db,
  );
  for (const [kind, variants] of [
    ['abtesting', ['control', 'B']],
    ['personalization', ['control', 'B', 'C']],
  ] as const) {
    for (const [i, variant] of variants.entries())
      await sql`insert into test_results (source_id, test_kind, test_id, variant, complete, total, raw)
        values ('main', ${kind}, 't1', ${variant}, ${100 + 10 * i}, ${1000 + 20 * i}, '{}')`.execute(
        owner.db,
      );
  }
}
