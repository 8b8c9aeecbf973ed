/**
 * Only a 401 (or a 403 from every endpoint) means the key is rejected: a 403 or 404 on
 * one endpoint fails that resource with one clear line, and the source's other resources load.
 */
import { Writable } from 'node:stream';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { printRun } from '../../src/cli/print-run.js';
import { renderStatus } from '../../src/cli/status.js';
import { RunFailedError } from '../../src/errors.js';
import { ENDPOINT_NAMES } from '../../src/simulator/endpoint-names.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { statusReport } from '../../src/status/status-report.js';
import type { RunResult } from '../../src/sync/outcomes.js';
import { captureLogger } from '../api/fixture-server.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst, simulatorSource } from '../helpers/sync-harness.js';
import { truthItems, warehouseItems } from '../helpers/warehouse-truth.js';

const FROM = '2026-03-01';
const TO = '2026-03-06';
const NOW = new Date('2026-03-07T05:00:00.000Z');

/** printRun's text and the exit code it decides (0 for ok). */
function exitOf(result: RunResult): { text: string; code: number } {
  let text = '';
  const out = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      text += chunk.toString();
      callback();
    },
  });
  try {
    printRun(result, out);
    return { text, code: 0 };
  } catch (error) {
    if (!(error instanceof RunFailedError)) throw error;
    return { text, code: error.exitCode };
  }
}

describe('a 403 or 404 on one endpoint', () => {
  let sim: Simulator;
  let t: TestDatabase;

  beforeAll(async () => {
    sim = await startSimulator({ seed: 8, from: FROM, to: TO, cap: 4000 });
  });
  afterAll(() => sim.stop());
  beforeEach(async () => {
    t = await createTestDatabase();
    sim.setOptions({ forbidden: [], missing: [] });
    sim.resetStats();
  });
  afterEach(() => t.drop());

  const count = async (table: 'ab_tests' | 'personalization_tests' | 'heatmaps' | 'test_results') =>
    (await t.db.selectFrom(table).select('source_id').execute()).length;

  it('403 on recordings: recordings fail with one line, everything else loads, exit 1', async () => {
    sim.setOptions({ forbidden: ['recordings'] });
    const { lines, logger } = captureLogger();

    const result = await runAgainst(t, sim, { now: NOW, logger });

    const line =
      'GET /v1/recordings refused with HTTP 403 for source main: this key may not read recordings; the other resources go on';
    expect(result.status).toBe('partial');
    expect(result.error).toContain(line);
    expect(lines.filter((l) => l.includes(line))).toHaveLength(1);
    expect(lines.some((l) => l.includes('API key rejected'))).toBe(false);
    // The first windows in flight were refused; the rest of the resource was not asked.
    const recordings = result.windows.filter((w) => w.resource === 'recordings');
    const refused = recordings.filter((w) => w.status === 'failed');
    expect(refused.length).toBeGreaterThanOrEqual(1);
    expect(refused.every((w) => w.refused === 403 && !w.fatal)).toBe(true);
    expect(recordings.filter((w) => w.status === 'skipped')).toHaveLength(recordings.length - refused.length);
    expect(sim.stats().byPath['/v1/recordings']).toBe(refused.length);

    // Rows loaded: every feedback and survey item, every snapshot; rows of recordings: none.
    const truth = truthItems(sim.truth());
    const stored = await warehouseItems(t);
    expect(stored.feedback).toEqual(truth.feedback);
    expect(stored.survey).toEqual(truth.survey);
    expect(stored.recordings).toEqual([]);
    expect(await count('ab_tests')).toBe(sim.truth().abTests.length);
    expect(await count('heatmaps')).toBe(sim.truth().heatmaps.length);

    // What status says: the refused day as a failed window, with the line.
    const report = await statusReport(t.db, '2026-03-07', 5);
    const status = report.resources.find((r) => r.resource === 'recordings');
    expect(status?.failedWindows.map((w) => w.error)).toEqual(refused.map(() => line));
    expect(report.healthy).toBe(false);
    expect(renderStatus(report)).toContain('refused with HTTP 403');
    const feedbackStatus = report.resources.find((r) => r.resource === 'feedback');
    expect(feedbackStatus?.failedWindows).toEqual([]);

    expect(exitOf(result).code).toBe(1);
  });

  it('403 on recordings in a backfill: the summary, its last line and the ledger count the same failed windows', async () => {
    sim.setOptions({ forbidden: ['recordings'] });
    const result = await runAgainst(t, sim, {
      now: NOW,
      request: { trigger: 'backfill', range: { from: FROM, to: TO } },
    });

    const ledger = await t.db
      .selectFrom('sync_windows')
      .select('day')
      .where('resource', '=', 'recordings')
      .where('status', '=', 'failed')
      .execute();
    const recordings = result.summary.main?.recordings;
    const { text } = exitOf(result);
    const lastLine = /(\d+) window\(s\) failed, (\d+) not run because of it/.exec(result.error ?? '');
    const row = /^main +recordings +(\d+) +(\d+) +(\d+) /m.exec(text);

    expect(ledger.length).toBeGreaterThanOrEqual(1);
    expect(recordings?.failedWindows).toBe(ledger.length);
    expect(Number(lastLine?.[1])).toBe(ledger.length);
    // The days a refusal kept from running: not run, in the summary and in the line alike.
    expect(recordings?.skippedWindows).toBe(6 - ledger.length);
    expect(Number(lastLine?.[2])).toBe(6 - ledger.length);
    // windows run, failed, not run.
    expect(row?.slice(1).map(Number)).toEqual([ledger.length, ledger.length, 6 - ledger.length]);
    expect(text).toMatch(new RegExp(`failed=${ledger.length} not_run=${6 - ledger.length} `));
  });

  it('404 on heatmaps: that snapshot fails with one line, the rest loads', async () => {
    sim.setOptions({ missing: ['heatmaps'] });
    const { lines, logger } = captureLogger();

    const result = await runAgainst(t, sim, { now: NOW, logger });

    const line =
      'GET /v1/heatmaps refused with HTTP 404 for source main: the server does not serve heatmaps; the other resources go on';
    expect(result.status).toBe('partial');
    const heatmaps = result.snapshots.find((s) => s.resource === 'heatmaps');
    expect(heatmaps).toMatchObject({ status: 'failed', error: line, refused: 404 });
    expect(lines.filter((l) => l.includes(line))).toHaveLength(1);
    expect(sim.stats().byPath['/v1/heatmaps']).toBe(1);
    expect(await count('heatmaps')).toBe(0);
    expect(await count('ab_tests')).toBe(sim.truth().abTests.length);
    expect((await warehouseItems(t)).recordings).toEqual(truthItems(sim.truth()).recordings);
    expect(exitOf(result).code).toBe(1);
  });

  it('403 on the A/B details: the list loads, stored results are kept, one line says why', async () => {
    await runAgainst(t, sim, { now: NOW, request: { resources: ['abtesting'] } });
    const resultsBefore = await count('test_results');
    expect(resultsBefore).toBeGreaterThan(0);
    sim.setOptions({ forbidden: ['abtesting/detail'] });
    const { lines, logger } = captureLogger();

    const result = await runAgainst(t, sim, { now: NOW, request: { resources: ['abtesting'] }, logger });

    const tests = sim.truth().abTests.length;
    const snapshot = result.snapshots.find((s) => s.resource === 'abtesting');
    expect(snapshot?.status).toBe('failed');
    expect(snapshot?.error).toBe(
      `GET /v1/abtesting/detail/${sim
        .truth()
        .abTests.map((x) => x.id)
        .find((id) =>
          snapshot?.error?.includes(id),
        )} refused with HTTP 403 for source main: this key may not read abtesting/detail; the other resources go on${tests > 1 ? ` (and ${tests - 1} more test(s))` : ''}`,
    );
    expect(lines.filter((l) => l.includes('may not read abtesting/detail'))).toHaveLength(1);
    expect(await count('ab_tests')).toBe(tests);
    const kept = await t.db.selectFrom('test_results').select('removed_at').execute();
    expect(kept).toHaveLength(resultsBefore);
    expect(kept.every((r) => r.removed_at === null)).toBe(true);
  });

  it('403 on every endpoint is a rejected key: the run fails at once with exit 3', async () => {
    sim.setOptions({ forbidden: [...ENDPOINT_NAMES] });
    const { lines, logger } = captureLogger();

    const result = await runAgainst(t, sim, { now: NOW, logger });

    const line = `API key rejected by ${sim.url} for source main (HTTP 403 on every endpoint)`;
    expect(result.status).toBe('failed');
    expect(result.error).toBe(line);
    expect(lines.filter((l) => l.includes(line))).toHaveLength(1);
    // Each resource was asked until its first refusal, not day after day.
    expect(sim.stats().requests).toBeLessThan(30);
    const { code } = exitOf(result);
    expect(code).toBe(3);
    expect(await count('ab_tests')).toBe(0);
    expect((await warehouseItems(t)).feedback).toEqual([]);
  });

  it('401 is a rejected key: the source stops, nothing of it is loaded, exit 3', async () => {
    const result = await runAgainst(t, sim, {
      now: NOW,
      sources: [simulatorSource(sim, 'main', 'wrong-key')],
    });
    expect(result.status).toBe('failed');
    expect(result.error).toBe(`API key rejected by ${sim.url} for source main (HTTP 401)`);
    expect(exitOf(result).code).toBe(3);
    expect(sim.stats().requests).toBeLessThan(20);
    expect(await count('ab_tests')).toBe(0);
  });
});
