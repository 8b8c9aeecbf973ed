/**
 * A run's counts add up: every item a day window fetched is inserted, updated, unchanged,
 * rejected, or one of the "other" kinds (ITEM_IDENTITY in src/sync/outcomes.ts); items of
 * neighbouring days that came along are counted apart, never in `inserted`. Every run of the
 * sync harness asserts the identity (test/helpers/sync-harness.ts); here it is shown on its own
 * terms, and in what a scheduled run logs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { printRun } from '../../src/cli/print-run.js';
import { WINDOWED_RESOURCES } from '../../src/schemas/resource-names.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import type { ResourceSummary, RunResult } from '../../src/sync/outcomes.js';
import { addDays, todayUtc } from '../../src/time/days.js';
import { cliEnv, startCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { capturingLogger } from '../helpers/fake-clock.js';
import { runAgainst } from '../helpers/sync-harness.js';

const NOW = new Date('2026-03-12T06:00:00.000Z');

/** Written, rejected and the other kinds, spelled out here rather than taken from the code under test. */
function accounted(s: ResourceSummary): number {
  return (
    s.inserted +
    s.updated +
    s.unchanged +
    s.rejected +
    (s.setAside ?? 0) +
    (s.duplicates ?? 0) +
    (s.suppressed ?? 0) +
    (s.discarded ?? 0)
  );
}

function windowed(result: RunResult): ResourceSummary[] {
  return WINDOWED_RESOURCES.flatMap((r) => {
    const s = result.summary.main?.[r];
    return s === undefined ? [] : [s];
  });
}

describe('the run summary adds up', () => {
  let t: TestDatabase;
  let sim: Simulator;
  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 11, from: '2026-03-01', to: '2026-03-11', cap: 4000 });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  it('per resource and in total, a first run and a second one that finds its lookback days unchanged; neighbours apart', async () => {
    const { logger, lines } = capturingLogger();
    const first = await runAgainst(t, sim, { now: NOW, logger });
    const second = await runAgainst(t, sim, { now: NOW });
    for (const run of [first, second]) {
      const summaries = windowed(run);
      expect(summaries).toHaveLength(3);
      for (const s of summaries) expect(accounted(s)).toBe(s.fetched);
      const fetched = summaries.reduce((n, s) => n + s.fetched, 0);
      expect(summaries.reduce((n, s) => n + accounted(s), 0)).toBe(fetched);
    }
    // The server's day is not yet proved UTC: each day is asked with its neighbours, whose items
    // come along and are counted apart.
    expect(windowed(first).reduce((n, s) => n + (s.neighbours ?? 0), 0)).toBeGreaterThan(0);
    expect(windowed(second).reduce((n, s) => n + s.unchanged, 0)).toBeGreaterThan(0);

    // The log has the same counts, one line per source and resource (a scheduled run prints no table).
    const logged = lines.filter((l) => l.msg === 'resource summary');
    expect(logged).toHaveLength(6);
    for (const resource of WINDOWED_RESOURCES)
      expect(logged.find((l) => l.resource === resource)).toMatchObject({
        source: 'main',
        fetched: first.summary.main?.[resource]?.fetched,
        inserted: first.summary.main?.[resource]?.inserted,
        unchanged: first.summary.main?.[resource]?.unchanged,
      });

    let text = '';
    printRun(first, { write: (chunk: string) => (text += chunk) });
    expect(text).toMatch(
      /^source\s+resource\s+windows run\s+failed\s+not run\s+fetched\s+inserted\s+updated\s+unchanged\s+rejected\s+other\s/,
    );
    expect(text).toContain('day windows: fetched = inserted + updated + unchanged + rejected + other');
    expect(text).toMatch(/items of neighbouring days that came along \(not in fetched\): \d+/);
  });
});

describe('a scheduled run', () => {
  let t: TestDatabase;
  let sim: Simulator;
  const today = todayUtc(new Date());
  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 12, from: addDays(today, -3), to: addDays(today, -1), cap: 4000 });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  it('logs the per-resource counts a manual run prints', async () => {
    const run = startCli(
      ['schedule', '--run-now'],
      cliEnv({
        DATABASE_URL: t.url,
        INSIGHTS_SCHEMA: t.schema,
        INSIGHTS_API_URL: sim.url,
        INSIGHTS_API_KEY: sim.apiKey,
        INSIGHTS_SOURCE_NAME: 'main',
        INSIGHTS_START_DATE: addDays(today, -3),
        LOG_LEVEL: 'info',
      }),
    );
    await expect
      .poll(
        async () =>
          (await t.db.selectFrom('sync_runs').select('status').where('status', '!=', 'running').execute())
            .length,
        { timeout: 60_000, interval: 100 },
      )
      .toBe(1);
    run.child.kill('SIGTERM');
    const result = await run.done;
    const lines = result.stderr
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const logged = lines.filter((l) => l.msg === 'resource summary');
    expect(logged.map((l) => l.resource).sort()).toEqual(
      ['abtesting', 'feedback', 'heatmaps', 'personalization', 'recordings', 'survey'].sort(),
    );
    for (const line of logged)
      expect(line).toMatchObject({
        source: 'main',
        job: 'nightly-sync',
        runId: expect.any(Number),
        fetched: expect.any(Number),
        inserted: expect.any(Number),
        unchanged: expect.any(Number),
        failedWindows: 0,
      });
  }, 90_000);
});
