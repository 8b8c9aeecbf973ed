import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { migrations } from '../../migrations/index.js';
import { migrateToLatest } from '../../src/db/migrator.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

let t: TestDatabase;

beforeAll(async () => {
  t = await createTestDatabase();
});

afterAll(() => t.drop());

async function selectValue(expression: ReturnType<typeof sql>): Promise<unknown> {
  const result = await sql<{ v: unknown }>`select ${expression} as v`.execute(t.db);
  return result.rows[0]?.v;
}

describe('type parsers', () => {
  const originalTz = process.env.TZ;
  afterEach(() => {
    if (originalTz === undefined) delete process.env.TZ;
    else process.env.TZ = originalTz;
  });

  test('int8 reads as a number', async () => {
    expect(await selectValue(sql`9007199254740991::int8`)).toBe(Number.MAX_SAFE_INTEGER);
    expect(await selectValue(sql`(-42)::int8`)).toBe(-42);
    expect(await selectValue(sql`(select count(*) from generate_series(1, 3))`)).toBe(3);
  });

  test('an int8 beyond 2^53 is refused, not rounded', async () => {
    await expect(selectValue(sql`9007199254740993::int8`)).rejects.toThrow(/beyond 2\^53/);
    // The pool is still usable afterwards.
    expect(await selectValue(sql`1::int8`)).toBe(1);
  });

  test('numeric reads as a number', async () => {
    expect(await selectValue(sql`12.50::numeric`)).toBe(12.5);
    expect(await selectValue(sql`(select avg(x) from (values (1), (2)) as t(x))`)).toBe(1.5);
  });

  test("date reads as 'YYYY-MM-DD' whatever the client's and the session's time zone", async () => {
    // One connection, so the session time zone applies to the queries that follow.
    await t.db.connection().execute(async (connection) => {
      for (const tz of ['UTC', 'America/Los_Angeles', 'Pacific/Kiritimati']) {
        process.env.TZ = tz;
        await sql`set time zone ${sql.lit(tz)}`.execute(connection);
        const { rows } = await sql<{ plain: unknown; fromInstant: unknown }>`
          select '2024-03-01'::date as plain,
                 ('2024-03-01T23:30:00Z'::timestamptz at time zone 'UTC')::date as "fromInstant"`.execute(
          connection,
        );
        expect(rows[0]).toEqual({ plain: '2024-03-01', fromInstant: '2024-03-01' });
      }
      await sql`reset time zone`.execute(connection);
    });
  });

  test('timestamptz reads as a Date', async () => {
    const value = await selectValue(sql`'2024-03-01T12:34:56.789Z'::timestamptz`);
    expect(value).toBeInstanceOf(Date);
    expect((value as Date).toISOString()).toBe('2024-03-01T12:34:56.789Z');
  });
});

test('search_path holds the data schema, then the bookkeeping schema', async () => {
  const { rows } = await sql<{ schema: string; path: string }>`
    select current_schema() as schema, current_setting('search_path') as path`.execute(t.db);
  expect(rows[0]).toEqual({ schema: t.schema, path: `${t.schema},${t.schema}_state` });
  // Unqualified names resolve in either: data tables in the first, the tool's own in the second.
  const where = await sql<{ relation: string; schema: string }>`
    select relation, to_regclass(relation)::regclass::text as qualified,
           (select n.nspname from pg_class c join pg_namespace n on n.oid = c.relnamespace
             where c.oid = to_regclass(relation)) as schema
      from unnest(array['feedback', 'sync_health', 'sync_windows', 'kysely_migration']) as relation`.execute(
    t.db,
  );
  expect(where.rows.map((r) => [r.relation, r.schema])).toEqual([
    ['feedback', t.schema],
    ['sync_health', t.schema],
    ['sync_windows', `${t.schema}_state`],
    ['kysely_migration', `${t.schema}_state`],
  ]);
});

describe('watermarks move forward only', () => {
  beforeAll(async () => {
    await t.db.insertInto('sources').values({ source_id: 'wm', base_url: 'http://insights.test' }).execute();
    await t.db
      .insertInto('watermarks')
      .values({ source_id: 'wm', resource: 'feedback', start_day: '2024-01-01', day: '2024-03-10' })
      .execute();
  });

  const setDay = (day: string | null) =>
    t.db
      .updateTable('watermarks')
      .set({ day })
      .where('source_id', '=', 'wm')
      .where('resource', '=', 'feedback')
      .execute();
  const currentDay = async () =>
    (
      await t.db
        .selectFrom('watermarks')
        .select('day')
        .where('source_id', '=', 'wm')
        .executeTakeFirstOrThrow()
    ).day;

  test('moving backward is refused by the database', async () => {
    await expect(setDay('2024-03-09')).rejects.toMatchObject({
      code: '23514',
      message: expect.stringMatching(/may not move backward/),
    });
    await expect(setDay(null)).rejects.toMatchObject({ code: '23514' });
    expect(await currentDay()).toBe('2024-03-10');
  });

  test('staying or moving forward is accepted', async () => {
    await setDay('2024-03-10');
    await setDay('2024-03-11');
    expect(await currentDay()).toBe('2024-03-11');
  });
});

describe('migrations', () => {
  test('migrating an up-to-date database is a no-op', async () => {
    expect(await migrateToLatest(t.db, t.schema)).toEqual({ applied: [] });
  });

  test('an empty schema is migrated once, then not again', async () => {
    // createTestDatabase migrates a schema other than the template's itself: start again from nothing.
    const fresh = await createTestDatabase({ schema: 'insights_fresh' });
    try {
      await sql`drop schema insights_fresh, insights_fresh_state cascade`.execute(fresh.db);
      expect(await migrateToLatest(fresh.db, fresh.schema)).toEqual({ applied: Object.keys(migrations) });
      expect(await migrateToLatest(fresh.db, fresh.schema)).toEqual({ applied: [] });
    } finally {
      await fresh.drop();
    }
  });
});
