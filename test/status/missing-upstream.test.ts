/**
 * Deletes on evidence, for day-windowed items: an item its day no longer serves is marked
 * missing_upstream_since once whole reads of that day lacked it in two runs in a row; it is kept,
 * never deleted, and the run summary and status count it. An empty answer is no evidence.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVIDENCE_HEADING, printRun } from '../../src/cli/print-run.js';
import { renderStatus } from '../../src/cli/status.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { statusReport } from '../../src/status/status-report.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst } from '../helpers/sync-harness.js';

const FROM = '2026-03-01';
const TO = '2026-03-05';
const NOW = new Date('2026-03-06T05:00:00.000Z');

describe('an item its day no longer serves', () => {
  let t: TestDatabase;
  let sim: Simulator;
  let removed: string;
  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 1, from: FROM, to: TO });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  const backfill = () =>
    runAgainst(t, sim, {
      now: NOW,
      request: { trigger: 'backfill', range: { from: FROM, to: TO }, resources: ['recordings'] },
    });
  const marks = () =>
    t.db
      .selectFrom('recordings')
      .select(['id', 'absent_since', 'missing_upstream_since'])
      .where((eb) =>
        eb.or([eb('absent_since', 'is not', null), eb('missing_upstream_since', 'is not', null)]),
      )
      .execute();

  it('an empty answer for a day marks nothing', async () => {
    expect((await backfill()).status).toBe('ok');
    sim.setOptions({ emptyAnswers: { recordings: 100 } });
    expect((await backfill()).status).toBe('ok');
    sim.setOptions({ emptyAnswers: {} });
    expect(await marks()).toEqual([]);
  });

  it('the first whole read lacking it marks it absent only: one read is not evidence', async () => {
    removed = sim.removeItem('recordings', '2026-03-04', 0);
    const result = await backfill();
    expect(result.summary.main?.recordings?.missingUpstream).toBe(0);
    const marked = await marks();
    expect(marked.map((m) => [m.id, m.absent_since instanceof Date, m.missing_upstream_since])).toEqual([
      [removed, true, null],
    ]);
  });

  it('the second run lacking it marks it missing upstream: kept, counted in the summary and status', async () => {
    const result = await backfill();
    expect(result.summary.main?.recordings?.missingUpstream).toBe(1);
    const marked = await marks();
    expect(marked.map((m) => [m.id, m.missing_upstream_since instanceof Date])).toEqual([[removed, true]]);
    const status = await statusReport(t.db, '2026-03-06');
    expect(status.resources.find((r) => r.resource === 'recordings')?.missingUpstream).toBe(1);
    expect(status.resources.find((r) => r.resource === 'feedback')?.missingUpstream).toBe(0);
    let printed = '';
    printRun(result, { write: (chunk: string) => (printed += chunk) });
    expect(printed.split('\n')).toContain(`${EVIDENCE_HEADING}: main/recordings: 1 missing upstream`);
    const shown = renderStatus(status).split('\n');
    expect(shown[0]).toMatch(/key collisions +missing upstream +failed windows/);
    const recordings = shown.find((line) => /^main +recordings /.test(line)) ?? '';
    const column = (shown[0] ?? '').indexOf('missing upstream');
    expect(recordings.slice(column).trim().startsWith('1 ')).toBe(true);
    expect(shown).toContain(`${EVIDENCE_HEADING}:`);
    expect(shown).toContain(`  run ${result.runId}: main/recordings: 1 missing upstream`);
    // status --json prints this report: the run's summary carries the count as it was recorded.
    const run = status.runs.find((r) => r.runId === result.runId);
    expect(run?.summary?.main?.recordings?.missingUpstream).toBe(1);
  });

  it('a later run counts it no more, and still keeps it', async () => {
    const result = await backfill();
    expect(result.summary.main?.recordings?.missingUpstream).toBe(0);
    expect(await marks()).toHaveLength(1);
    const rows = await t.db.selectFrom('recordings').select('id').execute();
    expect(rows.map((r) => r.id)).toContain(removed);
    expect(rows).toHaveLength(sim.truth().recordings.length + 1);
  });
});
