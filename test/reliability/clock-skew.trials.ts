import fc from 'fast-check';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { addDays, daysFrom } from '../../src/time/days.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst, simulatorSource } from '../helpers/sync-harness.js';
import { orderedDump } from './warehouse-text.js';

/**
 * Guarantee 5: a watermark in the future makes no request and no change; a run never marks today
 * or a later day done, whatever the clock does from one run to the next.
 */

const FROM = '2026-03-01';
const TO = '2026-03-10';
const WINDOWED = ['feedback', 'survey', 'recordings'] as const;
const STATE_TABLES = [
  'feedback',
  'survey_answers',
  'recordings',
  'visitors',
  'rejects',
  'sync_windows',
  'watermarks',
] as const;

describe('clock skew', () => {
  let t: TestDatabase;
  let sim: Simulator;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({
      seed: 17,
      from: FROM,
      to: TO,
      cap: 4000,
      volume: { feedbackPerDay: 3, surveyPerDay: 2, recordingsPerDay: 2, busyDayFeedback: 5 },
    });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  it('a watermark in the future: no request, and not one byte of the warehouse changes', async () => {
    const now = new Date('2026-03-11T05:00:00.000Z');
    const source = simulatorSource(sim, 'future');
    expect((await runAgainst(t, sim, { now, sources: [source] })).status).toBe('ok');
    await t.db
      .updateTable('watermarks')
      .set({ day: '2026-04-30' })
      .where('source_id', '=', 'future')
      .execute();
    const before = await orderedDump(t, STATE_TABLES);
    sim.resetStats();
    const run = await runAgainst(t, sim, {
      now,
      sources: [source],
      request: { resources: [...WINDOWED] },
    });
    expect(run.status).toBe('ok');
    expect(run.windows).toEqual([]);
    expect(sim.stats().requests).toBe(0);
    expect(await orderedDump(t, STATE_TABLES)).toBe(before);
  });

  it('property: whatever the clock says run after run (back, forward, far ahead), no run marks today or a later day done, and the watermark only covers done days', async () => {
    let sourceNumber = 0;
    const runSpec = fc.record({
      // From 3 days before the data to 12 days after its first day.
      nowOffset: fc.integer({ min: -3, max: 12 }),
      backfill: fc.option(
        fc.record({ from: fc.integer({ min: -2, max: 12 }), span: fc.integer({ min: 0, max: 8 }) }),
        {
          nil: undefined,
        },
      ),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(runSpec, { minLength: 2, maxLength: 4 }), async (runs) => {
        sourceNumber += 1;
        const source = simulatorSource(sim, `skew-${sourceNumber}`);
        let latestToday = '0000-00-00';
        for (const spec of runs) {
          const today = addDays(FROM, spec.nowOffset);
          if (today > latestToday) latestToday = today;
          const range = spec.backfill && {
            from: addDays(FROM, spec.backfill.from),
            to: addDays(FROM, spec.backfill.from + spec.backfill.span),
          };
          const closed = new Set(
            (
              await t.db
                .selectFrom('sync_windows')
                .select(['resource', 'day'])
                .where('source_id', '=', source.name)
                .where('status', '=', 'done')
                .execute()
            ).map((w) => `${w.resource} ${w.day}`),
          );
          const result = await runAgainst(t, sim, {
            now: new Date(`${today}T05:00:00.000Z`),
            sources: [source],
            settings: { startDate: FROM, lookbackDays: 2 },
            request: range
              ? { trigger: 'backfill', range, resources: [...WINDOWED] }
              : { resources: [...WINDOWED] },
          });
          expect(result.status).toBe('ok');
          // Nothing this run wrote is after its today, and nothing it closed is today or later.
          const wrote = await t.db
            .selectFrom('sync_windows')
            .select(['resource', 'day', 'status'])
            .where('run_id', '=', result.runId)
            .execute();
          for (const row of wrote) {
            expect(row.day <= today, `${row.day} written by a run on ${today}`).toBe(true);
            // Today stays open; a day a run with a later clock closed stays closed.
            if (row.day === today)
              expect(row.status).toBe(closed.has(`${row.resource} ${row.day}`) ? 'done' : 'open');
          }
          expect(result.windows.every((w) => w.day <= today)).toBe(true);
          // Every day from the start through each watermark is done, and no watermark reaches a
          // day that no run had seen end.
          const marks = await t.db
            .selectFrom('watermarks')
            .selectAll()
            .where('source_id', '=', source.name)
            .execute();
          for (const mark of marks) {
            if (mark.day === null) continue;
            expect(mark.day < latestToday).toBe(true);
            const done = await sql<{ n: number }>`
              select count(*)::int as n from sync_windows
              where source_id = ${source.name} and resource = ${mark.resource} and status = 'done'
                and day between ${mark.start_day} and ${mark.day}`.execute(t.db);
            expect(done.rows[0]?.n, `${mark.resource} through ${mark.day}`).toBe(
              daysFrom(mark.start_day, mark.day).length,
            );
          }
        }
      }),
      {
        numRuns: 20,
        // The clock stepped back onto a day a later run had closed, and a backfill over it.
        examples: [
          [
            [
              { nowOffset: 10, backfill: undefined },
              { nowOffset: 5, backfill: { from: 3, span: 4 } },
            ],
          ],
        ],
      },
    );
  }, 120_000);
});
