import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addDays, todayUtc } from '../../src/time/days.js';
import { cliEnv, runCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/** `insights-sync report` as the README shows it, on a warehouse with a source and nothing loaded yet. */
describe('insights-sync report', () => {
  let t: TestDatabase;
  let dir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    t = await createTestDatabase();
    await sql`insert into sources (source_id, base_url) values ('shop', 'https://api.example.com')`.execute(
      t.db,
    );
    dir = await mkdtemp(path.join(tmpdir(), 'insights-report-'));
    env = cliEnv({ DATABASE_URL: t.url, INSIGHTS_SCHEMA: t.schema });
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
    await t.drop();
  });

  it('covers the last 30 days by default, and says what the warehouse lacks instead of drawing empty charts', async () => {
    const out = path.join(dir, 'report.html');
    const result = await runCli(['report', '--out', out], env);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const today = todayUtc(new Date());
    expect(result.stdout).toContain(
      `: ${addDays(today, -29)} to ${today}, 1 source(s), 0 feedback items, 0 test variants`,
    );
    const html = await readFile(out, 'utf8');
    expect(html).toContain('No feedback in this range.');
    expect(html).not.toContain('<canvas');
  });

  it('takes a source and a range', async () => {
    const out = path.join(dir, 'march.html');
    const result = await runCli(
      ['report', '--out', out, '--source', 'shop', '--from', '2026-03-01', '--to', '2026-03-31'],
      env,
    );
    expect(result.code).toBe(0);
    expect(await readFile(out, 'utf8')).toContain('2026-03-01 to 2026-03-31');
  });

  it('names the problem in one line: an unknown source, a date that is not one, a range backwards', async () => {
    const out = path.join(dir, 'never.html');
    for (const [args, message] of [
      [['--source', 'nope'], 'insights-sync: --source: the warehouse has no source named nope; it has shop'],
      [['--from', '2026-02-30'], 'insights-sync: --from: 2026-02-30 is not a day of the calendar'],
      [['--to', 'yesterday'], 'insights-sync: --to: expected a date YYYY-MM-DD, got yesterday'],
      [
        ['--from', '2026-03-02', '--to', '2026-03-01'],
        'insights-sync: --from 2026-03-02 is after --to 2026-03-01',
      ],
    ] as const) {
      const result = await runCli(['report', '--out', out, ...args], env);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr.trim()).toBe(message);
    }
    await expect(readFile(out, 'utf8')).rejects.toThrow(/ENOENT/);
  });
});
