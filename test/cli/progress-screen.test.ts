import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_RESOURCES } from '../../src/schemas/resources.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { addDays, todayUtc } from '../../src/time/days.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runOnTerminal } from '../helpers/terminal-screen.js';

const TODAY = todayUtc(new Date());
const FROM = addDays(TODAY, -30);
const TO = addDays(TODAY, -1);
const BACKFILL = ['backfill', '--from', FROM, '--to', TO, '--resources', 'feedback,survey,recordings'];
const BAR =
  /^backfill \|[█░]{30}\| (\d+)\/30 days \| \d+ items \| \d+ items\/s \| (ETA \S+|(\d+) windows not run)$/;
const TABLE_HEADER = /^source +resource +windows run +failed +not run +fetched +inserted/;

/** The screen line starting with `start` and the continuation lines below it (indented further). */
function paragraph(screen: string[], start: string): string[] {
  const at = screen.findIndex((line) => line.startsWith(start));
  if (at < 0) return [];
  const indent = `${/^ */.exec(start)?.[0] ?? ''}  `;
  const rest = screen.slice(at + 1);
  const end = rest.findIndex((line) => !line.startsWith(indent));
  return [screen[at] ?? '', ...(end < 0 ? rest : rest.slice(0, end))];
}

/** The days whose three windows the ledger has loaded. */
async function loadedDays(t: TestDatabase): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from (
      select day from sync_windows where status in ('done', 'open') group by day having count(*) = 3) d`.execute(
    t.db,
  );
  return rows[0]?.n ?? 0;
}

describe('backfill and status on a terminal (140 x 45 unless said, as a user sees it)', () => {
  let t: TestDatabase;
  let sim: Simulator;
  let env: Record<string, string>;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 17, from: FROM, to: TO, latencyMs: 60 });
    // No CI variable: on a terminal and outside CI the CLI draws its bar and logs in colour-free
    // pretty lines, as on a user's machine.
    env = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      TERM: 'xterm-256color',
      LOG_LEVEL: 'info',
      NO_COLOR: '1',
      DATABASE_URL: t.url,
      INSIGHTS_API_URL: sim.url,
      INSIGHTS_API_KEY: sim.apiKey,
      INSIGHTS_CONCURRENCY: '2',
    };
  });
  afterAll(async () => {
    await sim?.stop();
    await t?.drop();
  });

  it('leaves the log lines whole, then the final bar once, then the summary', async () => {
    const run = await runOnTerminal(BACKFILL, env);
    expect(run.code, run.screen.join('\n')).toBe(0);
    const bars = run.screen.filter((line) => line.startsWith('backfill |'));
    expect(bars, run.screen.join('\n')).toHaveLength(1);
    const barAt = run.screen.findIndex((line) => line.startsWith('backfill |'));
    expect(run.screen[barAt]).toMatch(BAR);
    expect(BAR.exec(run.screen[barAt] ?? '')?.[1]).toBe('30');
    // Every log line above the bar stands as written; the summary starts right below the bar.
    expect(run.screen.slice(0, barAt).some((line) => line.includes('INFO: run finished'))).toBe(true);
    expect(run.screen.slice(0, barAt).filter((line) => TABLE_HEADER.test(line))).toEqual([]);
    expect(run.screen[barAt + 1]).toMatch(TABLE_HEADER);
    expect(run.screen.at(-2)).toMatch(/^run \d+: ok in [\d.]+ s$/);
    expect(run.screen.at(-1)).toMatch(/^totals: sources=1 windows_run=90 failed=0 not_run=0 fetched=\d+ /);
    // The counts are in the table; the log on the same screen does not repeat them.
    expect(run.screen.filter((line) => line.includes('resource summary'))).toEqual([]);
    // The sentence under the table is broken between words, not where the terminal ends.
    const legend = paragraph(run.screen, 'day windows:');
    expect(legend.length, run.screen.join('\n')).toBeGreaterThan(1);
    expect(legend.slice(1).every((line) => line.startsWith('  '))).toBe(true);
    expect(legend.map((line) => line.trim()).join(' ')).toContain(
      'other (other: set aside in key_collisions, duplicates in a response, forgotten visitors, items of a failed day);',
    );
  }, 90_000);

  it('status on an 80-column terminal: what the servers do, broken between words', async () => {
    const run = await runOnTerminal(['status'], env, { cols: 80 });
    const screen = run.screen.join('\n');
    const reading = paragraph(run.screen, '  default/feedback: ');
    expect(reading.length, screen).toBeGreaterThan(1);
    expect(reading.every((line) => line.length <= 80)).toBe(true);
    expect(reading.slice(1).every((line) => line.startsWith('    '))).toBe(true);
    expect(reading.map((line) => line.trim()).join(' ')).toMatch(
      /^default\/feedback: startdate inclusive, enddate inclusive, UTC days, .*oldest first/,
    );
  }, 90_000);

  it('status on an 80-column terminal: its tables fit, none shown as records, none broken', async () => {
    const run = await runOnTerminal(['status'], env, { cols: 80 });
    const screen = run.screen.join('\n');
    expect(screen).not.toContain('RECORD');
    // A row per resource and one per run (the backfill above), each on one line.
    for (const resource of ALL_RESOURCES)
      expect(
        run.screen.filter((line) => new RegExp(`^default +${resource} `).test(line)),
        screen,
      ).toHaveLength(1);
    expect(
      run.screen.filter((line) => new RegExp(`^default +feedback +${TO} `).test(line)),
      screen,
    ).toHaveLength(1);
    expect(
      run.screen.filter((line) => /^ +\d+ +backfill +ok +/.test(line)),
      screen,
    ).toHaveLength(1);
    expect(
      run.screen.filter((line) => /^source +resource +watermark/.test(line)),
      screen,
    ).toHaveLength(1);
  }, 90_000);

  it('after Ctrl+C, the bar shows the days the ledger holds and the windows not run', async () => {
    await sql`truncate sync_windows, watermarks, feedback, survey_answers, recordings`.execute(t.db);
    // Ctrl+C once the bar shows 5 days done.
    const run = await runOnTerminal(BACKFILL, env, {
      interruptWhen: (output) => [...output.matchAll(/(\d+)\/30 days/g)].some((m) => Number(m[1]) >= 5),
    });
    const screen = run.screen.join('\n');
    expect(run.code, screen).toBe(130);
    const bars = run.screen.filter((line) => line.startsWith('backfill |'));
    expect(bars, screen).toHaveLength(1);
    const match = BAR.exec(bars[0] ?? '');
    expect(match, screen).not.toBeNull();
    expect(Number(match?.[1])).toBe(await loadedDays(t));
    expect(Number(match?.[1])).toBeGreaterThanOrEqual(5);
    expect(Number(match?.[1])).toBeLessThan(30);
    expect(Number(match?.[3]), screen).toBeGreaterThan(0);
    // The summary: the windows run (the ledger's) and those not run add up to the 90 planned.
    const rows = run.screen
      .map((line) => /^default +(?:feedback|survey|recordings) +(\d+) +(\d+) +(\d+) /.exec(line))
      .filter((m) => m !== null);
    expect(rows, screen).toHaveLength(3);
    const ran = rows.reduce((n, m) => n + Number(m[1]), 0);
    const notRun = rows.reduce((n, m) => n + Number(m[3]), 0);
    const { rows: ledger } = await sql<{ n: number }>`select count(*)::int as n from sync_windows`.execute(
      t.db,
    );
    expect(ran, screen).toBe(ledger[0]?.n);
    expect(ran + notRun).toBe(90);
    expect(notRun).toBe(Number(match?.[3]));
  }, 90_000);
});
