/**
 * `insights-sync verify` end to end: the findings on stdout (JSON with --json), the exit code, and
 * --dry-run, which reports the same findings and leaves the warehouse exactly as it was.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { addDays, todayUtc } from '../../src/time/days.js';
import { cliEnv, runCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

// The CLI runs on the real clock: the simulated range ends the day before yesterday.
const TODAY = todayUtc(new Date());
const FROM = addDays(TODAY, -9);
const TO = addDays(TODAY, -2);
const VOLUME = { feedbackPerDay: 8, surveyPerDay: 6, recordingsPerDay: 5, busyDayFeedback: 8 };

describe('insights-sync verify', () => {
  let t: TestDatabase;
  let sim: Simulator;
  let env: Record<string, string>;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 40, from: FROM, to: TO, volume: VOLUME });
    env = cliEnv({
      DATABASE_URL: t.url,
      INSIGHTS_API_URL: sim.url,
      INSIGHTS_API_KEY: sim.apiKey,
      INSIGHTS_SOURCE_NAME: 'main',
    });
    const loaded = await runCli(['backfill', '--from', FROM, '--to', TO], env);
    expect(loaded.code, loaded.stderr).toBe(0);
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  /** Everything a verify could write, as one text: rows, marks, the ledger, the run log. */
  const warehouseState = async () => {
    const { rows } = await sql<{ state: string }>`
      select concat_ws('|',
        (select string_agg(md5(f::text), ',' order by f.id, f.feedback_id) from feedback f),
        (select string_agg(md5(s::text), ',' order by s.id, s.question_id) from survey_answers s),
        (select string_agg(md5(r::text), ',' order by r.id) from recordings r),
        (select string_agg(md5(w::text), ',' order by w.resource, w.day) from sync_windows w),
        (select count(*) from sync_runs), (select count(*) from key_collisions)) as state`.execute(t.db);
    return rows[0]?.state;
  };

  it('reports the same findings dry and for real; the dry run writes nothing', async () => {
    // The clock picks the range, and the seed's data: the first day of it with two recordings or
    // more. One that had one is left empty, and an empty answer proves nothing gone (it may be a
    // transient `200 []`): on 2026-12-06 the range's first recording was its day's only one.
    const days = sim
      .truth()
      .recordings.map((item) => item.dt.slice(0, 10))
      .filter((day) => day >= FROM && day <= TO)
      .sort();
    const gone = days.find((day, i) => days[i + 1] === day) as string;
    const removed = sim.removeItem('recordings', gone, 0);
    const advanced = sim.advance();
    const before = await warehouseState();

    const dry = await runCli(['verify', '--from', FROM, '--to', TO, '--dry-run', '--json'], env);
    expect(dry.code, dry.stderr).toBe(0);
    const dryFound = JSON.parse(dry.stdout) as { dryRun: boolean; totals: Record<string, number> };
    const late = advanced.late.feedback + advanced.late.survey + advanced.late.recordings;
    expect(dryFound.dryRun).toBe(true);
    expect(dryFound.totals).toEqual({ lacked: late, changed: advanced.edited.length, gone: 1, moved: 0 });
    expect(await warehouseState()).toBe(before);

    const real = await runCli(['verify', '--from', FROM, '--to', TO, '--json'], env);
    expect(real.code, real.stderr).toBe(0);
    const found = JSON.parse(real.stdout) as {
      totals: Record<string, number>;
      days: { resource: string; day: string; gone: number }[];
    };
    expect(found.totals).toEqual(dryFound.totals);
    expect(found.days.filter((d) => d.gone > 0).map((d) => `${d.resource} ${d.day}`)).toEqual([
      `recordings ${gone}`,
    ]);
    expect(await warehouseState()).not.toBe(before);
    const row = await t.db
      .selectFrom('recordings')
      .select('missing_upstream_since')
      .where('id', '=', removed)
      .executeTakeFirst();
    expect(row?.missing_upstream_since).not.toBeNull();

    // Nothing left to find; the table, on a pipe.
    const again = await runCli(['verify', '--from', FROM, '--to', TO], env);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('no differences');
    expect(again.stdout).toMatch(
      /totals: windows_verified=24 lacked=0 changed=0 gone=0 moved=0 requests=\d+/,
    );
  });

  it('has --help, and refuses a resource without days and a range backwards in one line (exit 2)', async () => {
    const help = await runCli(['verify', '--help'], env);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: insights-sync verify/);
    for (const args of [
      ['verify', '--from', FROM, '--resources', 'tests'],
      ['verify', '--from', TO, '--to', FROM],
      ['verify', '--from', 'yesterday'],
    ]) {
      const result = await runCli(args, env);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
    }
  });
});
