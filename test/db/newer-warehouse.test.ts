import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrations } from '../../migrations/index.js';
import { cliEnv, runCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/**
 * An older insights-sync on a warehouse a newer one migrated further: every command that opens it
 * refuses, in one line, exit code 2, naming both migrations and the upgrade, and changes nothing.
 */

const LATEST = Object.keys(migrations).sort().at(-1) ?? '';
const NEWER = '9999-from-a-newer-version';

describe('a warehouse migrated past this version', () => {
  let t: TestDatabase;
  let env: Record<string, string>;

  beforeAll(async () => {
    t = await createTestDatabase();
    await sql`insert into kysely_migration (name, timestamp) values (${NEWER}, now())`.execute(t.db);
    // No API answers there: a command that got past the warehouse would fail otherwise (exit 1 or 3).
    env = cliEnv({ DATABASE_URL: t.url, INSIGHTS_API_URL: 'http://127.0.0.1:9', INSIGHTS_API_KEY: 'k' });
  });
  afterAll(async () => {
    await t.drop();
  });

  const expectRefusal = (result: { code: number | null; stderr: string }) => {
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(/^insights-sync: [^\n]*\n$/);
    expect(result.stderr).toContain(`has migration ${NEWER}`);
    expect(result.stderr).toContain(`the newest it knows is ${LATEST}`);
    expect(result.stderr).toContain('upgrade insights-sync');
  };

  it.each([
    ['status'],
    ['sync'],
    ['backfill', '--from', '2026-01-01', '--to', '2026-01-02'],
    ['migrate'],
    ['forget', '--list'],
    ['forget', '--visitor', 'v-1'],
  ])('%s refuses with exit code 2', async (...args: string[]) => {
    expectRefusal(await runCli(args, env));
  });

  it('neither the refused sync nor the refused migrate wrote anything', async () => {
    const runs = await sql<{ n: number }>`select count(*)::int as n from sync_runs`.execute(t.db);
    expect(runs.rows[0]?.n).toBe(0);
    const names = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(t.db);
    expect(names.rows.at(-1)?.name).toBe(NEWER);
    expect(names.rows).toHaveLength(Object.keys(migrations).length + 1);
  });

  it('check fails its migrations row with code 2 and the same words', async () => {
    const result = await runCli(['check'], env);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stdout + result.stderr).toContain(`has migration ${NEWER}`);
  });
});
