/**
 * Where the analyst views said more than they knew, read by the analyst role on a plain
 * connection: a conversion above 1, a Wilson bound below 0, a partly declared split taken for no
 * declaration, a complete day whose items all sit in key_collisions, a count of items read
 * called "stored", and days of daily_activity that day_completeness did not list.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bookkeepingSchema } from '../../src/db/bookkeeping.js';
import { createRolesDatabase, type RolesDatabase, SCHEMA } from '../reliability/warehouse-roles.js';

const STATE = bookkeepingSchema(SCHEMA);
/** Days before the database's today, so every day is over and inside day_completeness's span. */
const BEFORE_LEDGER = "(now() at time zone 'UTC')::date - 12";
const ONLY_COLLISIONS = "(now() at time zone 'UTC')::date - 10";
const STORED = "(now() at time zone 'UTC')::date - 9";
const at = (day: string, hour: number) =>
  `((${day})::timestamp + interval '${hour} hours') at time zone 'UTC'`;

describe('the analyst views say what they know, and no more', () => {
  let roles: RolesDatabase;
  let analyst: pg.Client;

  beforeAll(async () => {
    roles = await createRolesDatabase();
    const owner = new pg.Client({ connectionString: roles.url.owner });
    await owner.connect();
    try {
      await owner.query(`set search_path = ${SCHEMA}`);
      await owner.query(`insert into sources (source_id, base_url) values ('a', 'https://a.example.com')`);
      // t1: a control, a variant without completions, and one reporting more completions than visitors.
      await owner.query(`insert into test_results (source_id, test_kind, test_id, variant, complete, total, raw)
        values ('a', 'abtesting', 't1', 'control', 100, 1000, '{}'), ('a', 'abtesting', 't1', 'variant 1', 0, 1000, '{}'),
               ('a', 'abtesting', 't1', 'variant 2', 1500, 1000, '{}'),
               ('a', 'abtesting', 't2', 'control', 0, 1, '{}'), ('a', 'abtesting', 't2', 'variant 1', 0, 7, '{}'),
               ('a', 'abtesting', 't3', 'control', 50, 500, '{}'), ('a', 'abtesting', 't3', 'variant 1', 60, 500, '{}'),
               ('a', 'personalization', 'p1', 'control', 0, 300, '{}'),
               ('a', 'personalization', 'p1', 'variant 1', 9, 3, '{}')`);
      // t1 declares weights for two of its three variants; t2 and t3 declare nothing (no default either).
      await owner.query(`insert into expected_allocations (source_id, test_id, variant, weight)
        values ('a', 't1', 'control', 1), ('a', 't1', 'variant 1', 1)`);
      // The ledger: a complete day whose 5 items all went to key_collisions, and a complete day of 2
      // items read while 3 rows are stored. Feedback also sits on a day before the first loaded one.
      await owner.query(`insert into ${STATE}.sync_windows (source_id, resource, day, status, item_count)
        values ('a', 'feedback', ${ONLY_COLLISIONS}, 'done', 5), ('a', 'feedback', ${STORED}, 'done', 2)`);
      for (let i = 1; i <= 5; i++)
        await owner.query(
          `insert into key_collisions (source_id, resource, item_key, dt, raw)
           values ('a', 'feedback', '${i}/101', ${at(ONLY_COLLISIONS, i)}, '{}')`,
        );
      await owner.query(`insert into feedback (source_id, id, feedback_id, rating, dt, raw)
        values ('a', 1, 101, 4, ${at(STORED, 1)}, '{}'), ('a', 2, 101, 5, ${at(STORED, 2)}, '{}'),
               ('a', 3, 101, 2, ${at(STORED, 3)}, '{}'),
               ('a', 6, 101, 3, ${at(BEFORE_LEDGER, 4)}, '{}'), ('a', 7, 101, 3, ${at(BEFORE_LEDGER, 5)}, '{}')`);
    } finally {
      await owner.end();
    }
    analyst = new pg.Client({ connectionString: roles.url.analyst });
    await analyst.connect();
  }, 60_000);
  afterAll(async () => {
    await analyst?.end();
    await roles?.drop();
  });

  const rows = async <R extends object>(query: string): Promise<R[]> => (await analyst.query<R>(query)).rows;

  it('conversion is null where complete exceeds total, like every other statistic of the row', async () => {
    for (const view of ['ab_test_results', 'personalization_results']) {
      const over = await rows<{
        conversion: number | null;
        conversion_ci_low: number | null;
        p_value: number | null;
      }>(`select conversion, conversion_ci_low, p_value from ${SCHEMA}.${view} where complete > total`);
      expect(over, view).toEqual([{ conversion: null, conversion_ci_low: null, p_value: null }]);
    }
    const daily = await rows<{ n: number }>(
      `select count(*)::int as n from ${SCHEMA}.test_result_daily where complete > total and conversion is not null`,
    );
    expect(daily).toEqual([{ n: 0 }]);
  });

  it('the Wilson interval stays within 0..1, and is 0 at its low end with no completions', async () => {
    const bounds = await rows<{ variant: string; low: number; high: number }>(
      `select test_id || ' ' || variant as variant, conversion_ci_low as low, conversion_ci_high as high
         from ${SCHEMA}.ab_test_results where conversion is not null
       union all
       select test_id || ' ' || variant, conversion_ci_low, conversion_ci_high
         from ${SCHEMA}.personalization_results where conversion is not null`,
    );
    expect(bounds.length).toBeGreaterThanOrEqual(6);
    expect(bounds.filter((b) => !(b.low >= 0 && b.high <= 1 && b.low <= b.high))).toEqual([]);
    const none = await rows<{ low: number }>(
      `select conversion_ci_low as low from ${SCHEMA}.ab_test_results where complete = 0 and total > 0`,
    );
    expect(none.map((r) => r.low)).toEqual([0, 0, 0]);
  });

  it("a split declared for some variants only says so: 'allocation incomplete', not 'allocation unknown'", async () => {
    const status = await rows<{ test_id: string; srm_status: string }>(
      `select distinct test_id, srm_status from ${SCHEMA}.ab_test_results order by test_id`,
    );
    expect(status).toEqual([
      { test_id: 't1', srm_status: 'allocation incomplete' },
      { test_id: 't2', srm_status: 'allocation unknown' },
      { test_id: 't3', srm_status: 'allocation unknown' },
    ]);
  });

  interface DayRow {
    day: string;
    status: string;
    items_stored: number | null;
    items_read: number | null;
    rows_stored: number;
    items_set_aside: number;
  }
  const feedbackDays = () =>
    rows<DayRow>(
      `select day::text as day, status, items_stored, items_read, rows_stored::int, items_set_aside::int
         from ${SCHEMA}.day_completeness where source_id = 'a' and resource = 'feedback' order by day`,
    );
  const dayOf = async (expression: string) =>
    (await rows<{ day: string }>(`select (${expression})::text as day`))[0]?.day ?? '';

  it('a complete day whose items all sit in key_collisions shows 0 rows stored and 5 set aside', async () => {
    const day = await dayOf(ONLY_COLLISIONS);
    expect((await feedbackDays()).find((r) => r.day === day)).toEqual({
      day,
      status: 'complete',
      items_stored: 5,
      items_read: 5,
      rows_stored: 0,
      items_set_aside: 5,
    });
    const activity = await rows(`select 1 from ${SCHEMA}.daily_activity where day = ${ONLY_COLLISIONS}`);
    expect(activity).toEqual([]);
  });

  it('items_read is what the last read returned, rows_stored what the table holds (items_stored kept as items_read)', async () => {
    const day = await dayOf(STORED);
    expect((await feedbackDays()).find((r) => r.day === day)).toMatchObject({
      status: 'complete',
      items_stored: 2,
      items_read: 2,
      rows_stored: 3,
    });
  });

  it('every day of daily_activity has its day_completeness row, with the same count; earlier days are not loaded', async () => {
    const activity = await rows<{ day: string; feedback_count: number; feedback_day_status: string }>(
      `select day::text as day, feedback_count::int, feedback_day_status
         from ${SCHEMA}.daily_activity where source_id = 'a' order by day`,
    );
    const days = new Map((await feedbackDays()).map((r) => [r.day, r]));
    expect(activity.length).toBe(2);
    for (const a of activity)
      expect(days.get(a.day), a.day).toMatchObject({
        rows_stored: a.feedback_count,
        status: a.feedback_day_status,
      });
    const before = await dayOf(BEFORE_LEDGER);
    expect(days.get(before)).toMatchObject({ status: 'not loaded', items_read: null, rows_stored: 2 });
  });

  it('day_completeness costs too little for PostgreSQL to JIT-compile it (seconds of compiling for a few hundred rows)', async () => {
    const plan = await rows<{ 'QUERY PLAN': [{ Plan: { 'Total Cost': number } }] }>(
      `explain (format json) select * from ${SCHEMA}.day_completeness where day >= current_date - 30`,
    );
    const jit = await rows<{ cost: string }>(`select current_setting('jit_above_cost') as cost`);
    expect(plan[0]?.['QUERY PLAN'][0].Plan['Total Cost']).toBeLessThan(Number(jit[0]?.cost));
  });
});
