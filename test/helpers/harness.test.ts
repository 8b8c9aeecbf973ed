import { sql } from 'kysely';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { withClient } from '../../scripts/dev-database/admin.js';
import { createTestDatabase, databaseServerUrl, type TestDatabase } from '../helpers/database.js';

let a: TestDatabase;
let b: TestDatabase;

beforeAll(async () => {
  [a, b] = await Promise.all([createTestDatabase(), createTestDatabase()]);
});

afterAll(async () => {
  await Promise.all([a.drop(), b.drop()]);
});

test('each test database is a migrated clone of its own', async () => {
  expect(a.url).not.toBe(b.url);
  await a.db.insertInto('sources').values({ source_id: 'only-in-a', base_url: 'http://a.test' }).execute();
  expect(await a.db.selectFrom('sources').select('source_id').execute()).toEqual([
    { source_id: 'only-in-a' },
  ]);
  expect(await b.db.selectFrom('sources').select('source_id').execute()).toEqual([]);
});

test('drop() removes the database and may be called twice', async () => {
  const c = await createTestDatabase();
  const name = new URL(c.url).pathname.slice(1);
  await sql`select 1`.execute(c.db);
  await c.drop();
  await c.drop();
  const exists = await withClient(databaseServerUrl(), async (admin) =>
    admin.query('select 1 from pg_database where datname = $1', [name]),
  );
  expect(exists.rowCount).toBe(0);
});
