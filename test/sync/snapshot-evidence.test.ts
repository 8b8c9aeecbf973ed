/**
 * Snapshots remove only on evidence: a transient empty or partial answer removes
 * nothing; an absence confirmed by a second run, or a test's detail answering 404, does. A
 * malformed variant is quarantined and its stored row kept. The run summary, `status --json` and
 * the printed texts count removals, revivals and suspicious rows.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/api/api-client.js';
import { printRun } from '../../src/cli/print-run.js';
import { renderStatus } from '../../src/cli/status.js';
import type { Resource } from '../../src/schemas/resources.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { statusReport } from '../../src/status/status-report.js';
import type { RunResult } from '../../src/sync/outcomes.js';
import { captureLogger } from '../api/fixture-server.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst, TEST_SETTINGS } from '../helpers/sync-harness.js';

const FROM = '2026-03-01';
const TO = '2026-03-05';
const SNAPSHOTS: Resource[] = ['abtesting', 'personalization', 'heatmaps'];
/** Asks of one read before an empty answer is believed: as many as a request's attempts. */
const ASKS = TEST_SETTINGS.maxAttempts;

describe('snapshots remove only on evidence', () => {
  let t: TestDatabase;
  let sim: Simulator;
  let day = 6;
  /** Each run a day later, so the results history gets a row per run day. */
  const nextNow = () => new Date(`2026-03-${String(day++).padStart(2, '0')}T05:00:00.000Z`);
  const run = (logger = captureLogger().logger) =>
    runAgainst(t, sim, { now: nextNow(), request: { resources: SNAPSHOTS }, logger });

  const live = async (table: 'ab_tests' | 'personalization_tests' | 'heatmaps') =>
    (await t.db.selectFrom(table).select('id').where('removed_at', 'is', null).execute())
      .map((r) => r.id)
      .sort();
  const results = () =>
    t.db
      .selectFrom('test_results')
      .select(['test_kind', 'test_id', 'variant', 'complete', 'total', 'removed_at', 'missing_runs'])
      .orderBy(['test_kind', 'test_id', 'variant'])
      .execute();
  const printed = (result: RunResult): string => {
    let text = '';
    const out = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        text += chunk.toString();
        callback();
      },
    });
    try {
      printRun(result, out);
    } catch {
      // A run that is not ok throws its exit decision after printing; the text is what is tested.
    }
    return text;
  };

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 21, from: FROM, to: TO });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  it('loads every test, result and heatmap on a first run', async () => {
    const result = await run();
    expect(result.status).toBe('ok');
    const truth = sim.truth();
    expect(await live('ab_tests')).toEqual(truth.abTests.map((x) => x.id).sort());
    expect(await live('personalization_tests')).toEqual(truth.personalizationTests.map((x) => x.id).sort());
    expect(await live('heatmaps')).toEqual(truth.heatmaps.map((x) => x.id).sort());
    const variants = Object.values(truth.results.abtesting).flat().length;
    expect((await results()).filter((r) => r.test_kind === 'abtesting')).toHaveLength(variants);
  });

  it('a transient `200 []` from a list is read again: nothing removed, nothing suspicious', async () => {
    const before = { ab: await live('ab_tests'), heatmaps: await live('heatmaps') };
    sim.resetStats();
    sim.setOptions({ emptyAnswers: { abtesting: 1, heatmaps: 1 } });

    const result = await run();

    expect(result.status).toBe('ok');
    expect(sim.stats().byPath['/v1/abtesting']).toBe(2);
    expect(sim.stats().byPath['/v1/heatmaps']).toBe(2);
    expect(await live('ab_tests')).toEqual(before.ab);
    expect(await live('heatmaps')).toEqual(before.heatmaps);
    expect(result.summary.main?.abtesting).toMatchObject({
      removed: 0,
      suspicious: 0,
      revived: 0,
      reasked: 1,
    });
    expect(result.summary.main?.heatmaps).toMatchObject({
      removed: 0,
      suspicious: 0,
      revived: 0,
      reasked: 1,
    });
    expect(printed(result)).not.toContain('snapshot changes');
  });

  it('a list empty on every ask of a run keeps every row as suspicious; the next full answer clears it', async () => {
    const heatmaps = await live('heatmaps');
    const abTests = await live('ab_tests');
    const { lines, logger } = captureLogger();
    sim.resetStats();
    sim.setOptions({ emptyAnswers: { abtesting: ASKS, heatmaps: ASKS } });

    const result = await run(logger);

    expect(result.status).toBe('ok');
    // Asked ASKS times, not once more after that: the re-asks were the second reading.
    expect(sim.stats().byPath['/v1/heatmaps']).toBe(ASKS);
    expect(result.summary.main?.heatmaps?.reasked).toBe(ASKS - 1);
    // Nothing removed: tests (their details still answer) and heatmaps alike are kept.
    expect(await live('heatmaps')).toEqual(heatmaps);
    expect(await live('ab_tests')).toEqual(abTests);
    expect(result.summary.main?.heatmaps).toMatchObject({ removed: 0, suspicious: heatmaps.length });
    expect(result.summary.main?.abtesting).toMatchObject({ removed: 0, suspicious: abTests.length });
    // A heatmap's absence is counted (one run of two); a test whose detail answered is not absent.
    const streaks = await t.db.selectFrom('heatmaps').select(['missing_runs', 'missing_since']).execute();
    expect(streaks.every((h) => h.missing_runs === 1 && h.missing_since instanceof Date)).toBe(true);
    const tests = await t.db.selectFrom('ab_tests').select(['missing_runs']).execute();
    expect(tests.every((x) => x.missing_runs === 0)).toBe(true);
    const warnings = lines.filter((l) => l.includes('snapshot suspicious'));
    expect(warnings.some((l) => l.includes(`${heatmaps.length} row(s) of heatmaps of source main`))).toBe(
      true,
    );
    expect(printed(result)).toContain(`main/heatmaps: ${heatmaps.length} suspicious`);

    const next = await run();
    expect(next.summary.main?.heatmaps).toMatchObject({ removed: 0, suspicious: 0, revived: 0 });
    const cleared = await t.db.selectFrom('heatmaps').select(['missing_runs', 'missing_since']).execute();
    expect(cleared.every((h) => h.missing_runs === 0 && h.missing_since === null)).toBe(true);
  });

  it('an absence in two runs in a row is evidence: removed, then revived when listed again', async () => {
    const heatmaps = await live('heatmaps');
    sim.setOptions({ emptyAnswers: { heatmaps: ASKS } });
    const first = await run();
    expect(first.summary.main?.heatmaps).toMatchObject({ removed: 0, suspicious: heatmaps.length });
    sim.setOptions({ emptyAnswers: { heatmaps: ASKS } });
    const second = await run();
    expect(second.summary.main?.heatmaps).toMatchObject({ removed: heatmaps.length, suspicious: 0 });
    expect(await live('heatmaps')).toEqual([]);
    expect(await t.db.selectFrom('heatmaps').select('id').execute()).toHaveLength(heatmaps.length);
    expect(printed(second)).toContain(`main/heatmaps: ${heatmaps.length} removed`);

    const third = await run();
    expect(third.summary.main?.heatmaps).toMatchObject({ removed: 0, revived: heatmaps.length });
    expect(await live('heatmaps')).toEqual(heatmaps);

    // status --json counts them per run; the text status shows them while non-zero.
    const report = await statusReport(t.db, '2026-03-31', 5);
    const summaries = report.runs.map((r) => r.summary?.main?.heatmaps);
    expect(summaries.slice(0, 3).map((s) => [s?.removed, s?.revived, s?.suspicious])).toEqual([
      [0, heatmaps.length, 0],
      [heatmaps.length, 0, 0],
      [0, 0, heatmaps.length],
    ]);
    const text = renderStatus(report);
    expect(text).toContain('snapshot changes');
    expect(text).toContain(`run ${second.runId}: main/heatmaps: ${heatmaps.length} removed`);
    expect(text).toContain(`run ${third.runId}: main/heatmaps: ${heatmaps.length} revived`);
  });

  it('a detail empty on every ask is not believed: the snapshot fails, the variants stay as they were', async () => {
    const before = await results();
    const abTests = (await live('ab_tests')).length;
    // Every detail ask of this run answers []: a test has at least one variant, so none is judged.
    sim.setOptions({ emptyAnswers: { 'abtesting/detail': abTests * ASKS } });

    const result = await run();

    expect(result.status).toBe('partial');
    const abtesting = result.summary.main?.abtesting;
    expect(abtesting).toMatchObject({ failedWindows: 1, removed: 0, suspicious: 0 });
    expect(abtesting?.reasked).toBe(abTests * (ASKS - 1));
    expect(abtesting?.errors[0]).toContain(`answered an empty list on all ${ASKS} asks`);
    expect(await results()).toEqual(before);
    // The next run reads them whole again.
    expect((await run()).status).toBe('ok');
    expect((await results()).every((r) => r.missing_runs === 0 && r.removed_at === null)).toBe(true);
  });

  it('a detail empty on some asks is asked again: every variant kept, nothing suspicious', async () => {
    const before = await results();
    const abTests = (await live('ab_tests')).length;
    sim.setOptions({ emptyAnswers: { 'abtesting/detail': abTests * (ASKS - 1) } });

    const result = await run();

    expect(result.status).toBe('ok');
    expect(result.summary.main?.abtesting).toMatchObject({ removed: 0, suspicious: 0 });
    expect(result.summary.main?.abtesting?.reasked).toBe(abTests * (ASKS - 1));
    expect(await results()).toEqual(before);
  });

  it('a malformed variant goes to rejects; its stored row stays as it was', async () => {
    const before = await results();
    sim.setOptions({ malformedVariants: true, emptyAnswers: {} });

    const result = await run();

    const malformed = sim.truth().malformedVariants;
    expect(malformed.length).toBeGreaterThan(0);
    expect(result.summary.main?.abtesting).toMatchObject({ removed: 0, suspicious: 0 });
    expect(result.summary.main?.abtesting?.rejected).toBe(
      malformed.filter((m) => m.kind === 'abtesting').length,
    );
    const after = await results();
    for (const m of malformed) {
      const key = (r: (typeof after)[number]) =>
        r.test_kind === m.kind && r.test_id === m.testId && r.variant === m.variant;
      expect(after.find(key)).toEqual(before.find(key));
      expect(after.find(key)?.removed_at).toBeNull();
    }
    const rejects = await t.db
      .selectFrom('rejects')
      .select(['resource'])
      .where('resource', 'in', ['abtesting/detail', 'personalization/detail'])
      .execute();
    expect(rejects).toHaveLength(malformed.length);
    sim.setOptions({ malformedVariants: false });
  });

  it('a test its list lacks and whose detail answers 404 is removed at once, with its results; it revives when back', async () => {
    const report = sim.advance();
    const gone = report.removedTests[0] as string;
    const variants = (await results()).filter((r) => r.test_id === gone).length;
    expect(variants).toBeGreaterThan(0);

    const result = await run();

    // One run suffices: the 404 is evidence. The test and each of its variants count as removed rows.
    expect(result.summary.main?.abtesting).toMatchObject({ removed: 1 + variants, suspicious: 0 });
    expect(await live('ab_tests')).not.toContain(gone);
    const goneResults = await t.db
      .selectFrom('test_results')
      .select('removed_at')
      .where('test_id', '=', gone)
      .execute();
    expect(goneResults).toHaveLength(variants);
    expect(goneResults.every((r) => r.removed_at instanceof Date)).toBe(true);

    const restored = sim.advance({ restoreRemoved: true }).restoredTests;
    expect(restored).toContain(gone);
    const back = await run();
    expect(back.summary.main?.abtesting).toMatchObject({ removed: 0, revived: 1 + variants });
    expect(await live('ab_tests')).toContain(gone);
    const revived = await t.db
      .selectFrom('test_results')
      .select('removed_at')
      .where('test_id', '=', gone)
      .execute();
    expect(revived.every((r) => r.removed_at === null)).toBe(true);
  });

  it('a partial list is read again: a row the second read holds stays; one both reads lack is suspicious', async () => {
    const heatmaps = await live('heatmaps');
    const dropped = heatmaps[0] as string;
    /** Drops one heatmap from the first `times` list answers of the run. */
    const dropping =
      (times: number) =>
      (client: ApiClient): ApiClient => ({
        ...client,
        heatmaps: async () => {
          const items = await client.heatmaps();
          if (times-- <= 0) return items;
          return items.filter((h) => (h as { id?: unknown }).id !== dropped);
        },
      });
    const once = await runAgainst(t, sim, {
      now: nextNow(),
      request: { resources: ['heatmaps'] },
      wrapClient: dropping(1),
    });
    expect(once.summary.main?.heatmaps).toMatchObject({ removed: 0, suspicious: 0 });

    const twice = await runAgainst(t, sim, {
      now: nextNow(),
      request: { resources: ['heatmaps'] },
      wrapClient: dropping(2),
    });
    expect(twice.summary.main?.heatmaps).toMatchObject({ removed: 0, suspicious: 1 });
    expect(await live('heatmaps')).toEqual(heatmaps);
    const row = await t.db
      .selectFrom('heatmaps')
      .select(['missing_runs', 'removed_at'])
      .where('id', '=', dropped)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ missing_runs: 1, removed_at: null });
  });
});
